"""Which trigger started a scheduled run, from the slug of the schedule that created its flow run.

Prefect's scheduler stamps every flow run it creates with ``created_by = {type: SCHEDULE,
display_value: <schedule slug>}`` (read by :func:`flows.prefect.schedules.schedule_slug_of_current_run`);
Ergon slugs each schedule ``trigger-<index>`` (:mod:`flows.trigger_refs`), so the slug leads
back to the exact trigger of the definition — its ``as_user``, its ``retry`` policy — even when a
definition has several schedules acting for different people.
"""

from __future__ import annotations

from typing import Any

from flows.trigger_refs import SCHEDULE_KINDS, TriggerRef, index_from_slug, refs_of


def scheduled_trigger(plan: Any, slug: str | None) -> TriggerRef | None:
    """The cron/interval trigger of ``plan`` whose schedule (slug ``slug``) created the flow run."""
    index = index_from_slug(slug)
    if index is None:
        return None
    refs = refs_of(plan.name, plan)
    if index >= len(refs) or refs[index].kind not in SCHEDULE_KINDS:
        return None  # the definition changed under a running schedule: act as a plain deployment run
    return refs[index]
