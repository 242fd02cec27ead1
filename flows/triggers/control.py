"""What `ergon schedules` and the dashboard's Schedules page show and change.

Every trigger of the definitions folder is listed — definition, kind, schedule, next run, last
run and its status, paused. ``pause``/``resume`` set the trigger's ``paused`` flag in the store
(``TriggerState``, read by the webhook server and by on-complete and submission dispatch) and,
for cron and interval triggers whose deployment exists, the ``active`` flag of its Prefect schedule (Prefect
then drops or re-creates the schedule's future runs). ``ergon serve`` also reads the store's flag
when it (re)registers the schedules, so a pause made while nothing is served still holds.
``run_now`` starts the trigger's definition at once with the trigger's ``input``, acting for its
``as_user``, recorded with trigger ``schedule`` (not retried: a person is watching).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from flows.trigger_refs import SCHEDULE_KINDS, TriggerRef, all_refs, find, schedule_slug
from flows.trigger_schedules import describe


@dataclass
class ScheduleRow:
    name: str
    definition: str
    kind: str
    schedule: str
    as_user: str
    enabled: bool
    paused: bool
    next_run_at: datetime | None
    last_run_id: str | None
    last_run_at: datetime | None
    last_status: str | None

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        for key in ("next_run_at", "last_run_at"):
            d[key] = d[key].isoformat() if d[key] else None
        return d


def _catalog(catalog: Any) -> Any:
    if catalog is not None:
        return catalog
    from flows.catalog import Catalog

    return Catalog.load()


def rows(catalog: Any = None, *, ask_prefect: bool = True) -> list[ScheduleRow]:
    """One row per trigger of the folder."""
    from flows.store import runs as run_store
    from flows.store import triggers as trigger_store

    refs = all_refs(_catalog(catalog))
    states = {(s.definition_name, s.trigger_index): s for s in trigger_store.list_trigger_states()}
    wanted = {r.definition for r in refs if r.kind in SCHEDULE_KINDS}
    upcoming: dict[tuple[str, str], datetime] = {}
    if ask_prefect and wanted and _prefect_up():
        from flows.prefect.schedules import next_scheduled_runs

        upcoming = next_scheduled_runs(wanted)
    out = []
    for ref in refs:
        state = states.get((ref.definition, ref.index))
        last = run_store.get_run(state.last_run_id) if state and state.last_run_id else None
        out.append(ScheduleRow(
            name=ref.name, definition=ref.definition, kind=ref.kind, schedule=describe(ref.trigger),
            as_user=ref.acting_user, enabled=ref.trigger.enabled, paused=bool(state and state.paused),
            next_run_at=upcoming.get((ref.definition, schedule_slug(ref.index))),
            last_run_id=state.last_run_id if state else None, last_run_at=state.last_run_at if state else None,
            last_status=last.status if last else None,
        ))
    return out


def _prefect_up() -> bool:
    """Whether the Prefect API Prefect's settings name answers now (environment, ``prefect.toml``
    or profile; its TLS settings and headers apply). One health check within 2 s, no retries: a
    down server must not stall the list for minutes of client retries."""
    from flows.prefect.api import reachable

    return reachable(timeout=2.0)


def set_paused(name: str, paused: bool, catalog: Any = None) -> list[TriggerRef]:
    """Pause or resume the trigger(s) ``name`` designates; returns them."""
    from flows.store import triggers as trigger_store

    refs = find(all_refs(_catalog(catalog)), name)
    for ref in refs:
        trigger_store.upsert_trigger_state(ref.definition, ref.index, kind=ref.kind, paused=paused, created_by=ref.trigger.as_user)
    scheduled = [r for r in refs if r.kind in SCHEDULE_KINDS]
    if scheduled and _prefect_up():  # otherwise `ergon serve` applies the store's flag when it starts
        from flows.prefect.schedules import set_schedules_active

        set_schedules_active(scheduled, active=not paused)
    return refs


def run_now(name: str, catalog: Any = None) -> list[Any]:
    """Start the definition of each trigger ``name`` designates now; returns how each started
    (:class:`flows.runs.Started`: through its deployment when it has one)."""
    from flows.runs import start_background
    from flows.store import triggers as trigger_store
    from flows.store.models import utcnow

    catalog = _catalog(catalog)
    started = []
    for ref in find(all_refs(catalog), name, kinds=SCHEDULE_KINDS):
        one = start_background(ref.definition, dict(ref.trigger.input), started_by=ref.acting_user, trigger="schedule")
        trigger_store.upsert_trigger_state(ref.definition, ref.index, kind=ref.kind, last_run_id=one.run_id,
                                           last_run_at=utcnow(), created_by=ref.trigger.as_user)
        started.append(one)
    return started
