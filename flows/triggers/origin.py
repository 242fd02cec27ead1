"""Which trigger started the current Prefect flow run.

Prefect's scheduler stamps every flow run it creates with ``created_by = {type: SCHEDULE,
display_value: <schedule slug>}``; Ergon slugs each schedule ``trigger-<index>``
(:mod:`flows.triggers.schedules`), so the slug leads back to the exact trigger of the
definition — its ``as_user``, its ``retry`` policy — even when a definition has several
schedules acting for different people.
"""

from __future__ import annotations

from typing import Any

from flows.triggers.refs import SCHEDULE_KINDS, TriggerRef, index_from_slug, refs_of


def schedule_slug_of_current_run() -> str | None:
    """The slug of the schedule that created the running flow run (None: not a scheduled run)."""
    from prefect.context import FlowRunContext

    ctx = FlowRunContext.get()
    created_by = getattr(getattr(ctx, "flow_run", None), "created_by", None)
    if created_by is None or str(getattr(created_by, "type", "")).upper() != "SCHEDULE":
        return None
    return getattr(created_by, "display_value", None)


def scheduled_trigger(plan: Any) -> TriggerRef | None:
    """The cron/interval trigger of ``plan`` whose schedule created the running flow run."""
    index = index_from_slug(schedule_slug_of_current_run())
    if index is None:
        return None
    refs = refs_of(plan.name, plan)
    if index >= len(refs) or refs[index].kind not in SCHEDULE_KINDS:
        return None  # the definition changed under a running schedule: act as a plain deployment run
    return refs[index]
