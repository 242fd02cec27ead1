"""What `ergon schedules` and the dashboard's Schedules page show and change.

Every trigger of the definitions folder is listed — definition, kind, schedule, next run, last
run and its status, paused. ``pause``/``resume`` set the trigger's ``paused`` flag in the store
(``TriggerState``, read by the webhook server and by on-complete dispatch) and, for cron and
interval triggers whose deployment exists, the ``active`` flag of its Prefect schedule (Prefect
then drops or re-creates the schedule's future runs). ``ergon serve`` also reads the store's flag
when it (re)registers the schedules, so a pause made while nothing is served still holds.
``run_now`` starts the trigger's definition at once with the trigger's ``input``, acting for its
``as_user``, recorded with trigger ``schedule`` (not retried: a person is watching).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from flows.triggers.refs import SCHEDULE_KINDS, TriggerRef, all_refs, find, schedule_slug
from flows.triggers.schedules import describe, full_deployment_name


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
    from flows.store import repo

    refs = all_refs(_catalog(catalog))
    states = {(s.definition_name, s.trigger_index): s for s in repo.list_trigger_states()}
    upcoming = _next_runs({r.definition for r in refs if r.kind in SCHEDULE_KINDS}) if ask_prefect else {}
    out = []
    for ref in refs:
        state = states.get((ref.definition, ref.index))
        last = repo.get_run(state.last_run_id) if state and state.last_run_id else None
        out.append(ScheduleRow(
            name=ref.name, definition=ref.definition, kind=ref.kind, schedule=describe(ref.trigger),
            as_user=ref.acting_user, enabled=ref.trigger.enabled, paused=bool(state and state.paused),
            next_run_at=upcoming.get((ref.definition, schedule_slug(ref.index))),
            last_run_id=state.last_run_id if state else None, last_run_at=state.last_run_at if state else None,
            last_status=last.status if last else None,
        ))
    return out


def _next_runs(definitions: set[str]) -> dict[tuple[str, str], datetime]:
    """Earliest Scheduled flow run per (definition, schedule slug), from Prefect (empty when the
    server is not reachable or nothing is deployed)."""
    if not definitions or not _prefect_up():
        return {}
    try:
        from prefect.client.orchestration import get_client
        from prefect.client.schemas.filters import (
            DeploymentFilter, DeploymentFilterName, FlowRunFilter, FlowRunFilterState, FlowRunFilterStateType,
        )
        from prefect.client.schemas.objects import StateType
        from prefect.client.schemas.sorting import FlowRunSort

        from flows.triggers.schedules import deployment_name

        with get_client(sync_client=True) as client:
            runs = client.read_flow_runs(
                deployment_filter=DeploymentFilter(name=DeploymentFilterName(any_=[deployment_name(d) for d in definitions])),
                flow_run_filter=FlowRunFilter(state=FlowRunFilterState(type=FlowRunFilterStateType(any_=[StateType.SCHEDULED]))),
                sort=FlowRunSort.EXPECTED_START_TIME_ASC, limit=200,
            )
            names = {}
            out: dict[tuple[str, str], datetime] = {}
            for run in runs:
                created = run.created_by
                if created is None or str(created.type).upper() != "SCHEDULE":
                    continue
                if run.flow_id not in names:
                    names[run.flow_id] = client.read_flow(run.flow_id).name
                key = (names[run.flow_id], created.display_value)
                if key not in out and run.expected_start_time:
                    out[key] = run.expected_start_time
            return out
    except Exception:  # no server / no deployment: the list still shows the store's view
        return {}


def _prefect_up() -> bool:
    """Whether the Prefect API answers now (a down server must not stall the list for minutes
    of client retries)."""
    import os

    from flows.server import healthy

    url = os.environ.get("PREFECT_API_URL")
    return bool(url) and healthy(url, timeout=2.0)


def set_paused(name: str, paused: bool, catalog: Any = None) -> list[TriggerRef]:
    """Pause or resume the trigger(s) ``name`` designates; returns them."""
    from flows.store import repo

    refs = find(all_refs(_catalog(catalog)), name)
    for ref in refs:
        repo.upsert_trigger_state(ref.definition, ref.index, kind=ref.kind, paused=paused, created_by=ref.trigger.as_user)
    scheduled = [r for r in refs if r.kind in SCHEDULE_KINDS]
    if scheduled and _prefect_up():  # otherwise `ergon serve` applies the store's flag when it starts
        _set_prefect_active(scheduled, active=not paused)
    return refs


def _set_prefect_active(refs: list[TriggerRef], *, active: bool) -> None:
    """Mirror a pause in Prefect (no deployment yet: ``ergon serve`` applies the flag when it starts)."""
    from prefect.client.orchestration import get_client
    from prefect.exceptions import ObjectNotFound

    with get_client(sync_client=True) as client:
        by_definition: dict[str, list[TriggerRef]] = {}
        for ref in refs:
            by_definition.setdefault(ref.definition, []).append(ref)
        for definition, group in by_definition.items():
            try:
                deployment = client.read_deployment_by_name(full_deployment_name(definition))
            except ObjectNotFound:
                continue
            slugs = {schedule_slug(r.index): r for r in group}
            for schedule in deployment.schedules:
                ref = slugs.get(schedule.slug)
                if ref is not None:
                    client.update_deployment_schedule(deployment.id, schedule.id,
                                                      active=active and bool(ref.trigger.enabled))


def prefect_schedule_states(definition: str) -> dict[str, bool]:
    """``{slug: active}`` of a definition's deployment schedules in Prefect ({} if not deployed)."""
    from prefect.client.orchestration import get_client
    from prefect.exceptions import ObjectNotFound

    with get_client(sync_client=True) as client:
        try:
            deployment = client.read_deployment_by_name(full_deployment_name(definition))
        except ObjectNotFound:
            return {}
        return {s.slug: s.active for s in deployment.schedules if s.slug}


def run_now(name: str, catalog: Any = None) -> list[str]:
    """Start the definition of each trigger ``name`` designates now; returns the run ids."""
    from flows.launch import start_detached
    from flows.store import repo
    from flows.store.models import utcnow

    catalog = _catalog(catalog)
    run_ids = []
    for ref in find(all_refs(catalog), name, kinds=SCHEDULE_KINDS):
        run_id = start_detached(ref.definition, dict(ref.trigger.input), started_by=ref.acting_user, trigger="schedule")
        repo.upsert_trigger_state(ref.definition, ref.index, kind=ref.kind, last_run_id=run_id, last_run_at=utcnow(),
                                  created_by=ref.trigger.as_user)
        run_ids.append(run_id)
    return run_ids
