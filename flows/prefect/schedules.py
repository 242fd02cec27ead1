"""Triggers as Prefect schedules, and what Prefect knows of them.

* :func:`prefect_schedules` — the cron/interval triggers of a definition as Prefect
  ``DeploymentScheduleCreate`` objects (shared by ``ergon serve`` and ``ergon deploy``'s
  ``prefect.yaml``), slugged ``trigger-<index>``.
* :func:`schedule_slug_of_current_run` — which schedule created the running flow run.
* :func:`next_scheduled_runs`, :func:`set_schedules_active`, :func:`prefect_schedule_states` —
  what ``ergon schedules`` and the dashboard's Schedules page read and change in Prefect.
"""

from __future__ import annotations

import datetime as dt
from datetime import datetime
from typing import Any

from prefect.client.orchestration import get_client
from prefect.client.schemas.actions import DeploymentScheduleCreate
from prefect.client.schemas.filters import (
    DeploymentFilter,
    DeploymentFilterName,
    FlowRunFilter,
    FlowRunFilterState,
    FlowRunFilterStateType,
)
from prefect.client.schemas.objects import StateType
from prefect.client.schemas.schedules import CronSchedule, IntervalSchedule
from prefect.client.schemas.sorting import FlowRunSort
from prefect.context import FlowRunContext
from prefect.exceptions import ObjectNotFound

from compiler.schedule_syntax import interval_seconds
from flows.trigger_refs import SCHEDULE_KINDS, TriggerRef, schedule_slug, trigger_models
from flows.trigger_schedules import INTERVAL_ANCHOR, deployment_name, flow_parameters, full_deployment_name


def prefect_schedules(definition: Any, *, paused: set[int] | frozenset[int] = frozenset(),
                      parameters: set[str] | None = None) -> list[Any]:
    """``DeploymentScheduleCreate`` objects for the cron/interval triggers of ``definition``.

    ``definition`` is a Plan (preferred), an IR definition, or a list of triggers. Each schedule
    has slug ``trigger-<index>``, the trigger's ``input`` as parameters — only the flow's
    parameters when they are known: from a Plan's input schema, or ``parameters`` — and is active
    unless the trigger is disabled or its index is in ``paused``.
    """
    if parameters is None and isinstance(getattr(definition, "input_schema", None), dict):
        parameters = set(definition.input_schema.get("properties", {}))
    out = []
    for index, trigger in enumerate(trigger_models(definition)):
        if trigger.type not in SCHEDULE_KINDS:
            continue
        if trigger.type == "cron":
            schedule: Any = CronSchedule(cron=trigger.cron, timezone=trigger.timezone or "UTC")
        else:
            schedule = IntervalSchedule(interval=dt.timedelta(seconds=interval_seconds(trigger.every)),
                                        anchor_date=INTERVAL_ANCHOR)
        out.append(DeploymentScheduleCreate(
            schedule=schedule, active=bool(trigger.enabled) and index not in paused,
            parameters=flow_parameters(trigger, parameters), slug=schedule_slug(index),
        ))
    return out


def schedule_slug_of_current_run() -> str | None:
    """The slug of the schedule that created the running flow run (None: not a scheduled run)."""
    ctx = FlowRunContext.get()
    created_by = getattr(getattr(ctx, "flow_run", None), "created_by", None)
    if created_by is None or str(getattr(created_by, "type", "")).upper() != "SCHEDULE":
        return None
    return getattr(created_by, "display_value", None)


def next_scheduled_runs(definitions: set[str]) -> dict[tuple[str, str], datetime]:
    """Earliest Scheduled flow run per (definition, schedule slug), from Prefect (empty when the
    server is not reachable or nothing is deployed)."""
    if not definitions:
        return {}
    try:
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
                key = (names[run.flow_id], created.display_value or "")
                if key not in out and run.expected_start_time:
                    out[key] = run.expected_start_time
            return out
    except Exception:  # no server / no deployment: the list still shows the store's view
        return {}


def set_schedules_active(refs: list[TriggerRef], *, active: bool) -> None:
    """Mirror a pause in Prefect (no deployment yet: ``ergon serve`` applies the flag when it starts)."""
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
                found = slugs.get(schedule.slug) if schedule.slug else None
                if found is not None:
                    client.update_deployment_schedule(deployment.id, schedule.id,
                                                      active=active and bool(found.trigger.enabled))


def prefect_schedule_states(definition: str) -> dict[str, bool]:
    """``{slug: active}`` of a definition's deployment schedules in Prefect ({} if not deployed)."""
    with get_client(sync_client=True) as client:
        try:
            deployment = client.read_deployment_by_name(full_deployment_name(definition))
        except ObjectNotFound:
            return {}
        return {s.slug: s.active for s in deployment.schedules if s.slug}
