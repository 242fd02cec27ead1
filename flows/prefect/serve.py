"""``ergon serve``'s Prefect side: the triggered definitions as served deployments.

One ``RunnerDeployment`` per definition with cron/interval triggers, its flow the module
attribute ``flows.prefect.deployments.flow_<name>`` (importable from anywhere, so the runner's
subprocesses find it), served by Prefect's ``serve`` with ``pause_on_shutdown=False`` (stopping
serve leaves the schedules on; see :mod:`flows.triggers.serve`).
"""

from __future__ import annotations

from typing import Any

from prefect import serve
from prefect.types.entrypoint import EntrypointType

import flows.prefect.deployments as entries
from flows.prefect.schedules import prefect_schedules
from flows.store import triggers as trigger_store
from flows.trigger_refs import TriggerRef
from flows.trigger_schedules import deployment_name


def runner_deployments(scheduled: dict[str, list[TriggerRef]], catalog: Any) -> list[Any]:
    """One Prefect ``RunnerDeployment`` per definition with schedules (paused triggers inactive)."""
    out = []
    for definition, refs in sorted(scheduled.items()):
        for ref in refs:  # the list shows every served trigger, even before its first run
            trigger_store.upsert_trigger_state(ref.definition, ref.index, kind=ref.kind, created_by=ref.trigger.as_user)
        paused = {s.trigger_index for s in trigger_store.list_trigger_states(definition) if s.paused}
        flow = getattr(entries, entries.entry_attribute(definition))
        out.append(flow.to_deployment(
            name=deployment_name(definition),
            schedules=prefect_schedules(catalog.compile(definition).plan, paused=paused),
            entrypoint_type=EntrypointType.MODULE_PATH,  # `flows.prefect.deployments.flow_<name>`: importable from anywhere
            tags=["ergon", "served"],
        ))
    return out


def serve_deployments(deployments: list[Any], *, limit: int | None = None) -> None:
    """Serve ``deployments`` until interrupted (blocks)."""
    serve(*deployments, pause_on_shutdown=False, limit=limit, print_starting_message=False)
