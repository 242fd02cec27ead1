"""An agent's workstream (a delegated sub-agent) as a Prefect flow run of its own.

The engine's side (:mod:`flows.runtime.workstreams`) hands over the child's body; this runs it as
``ergon-workstream``, named after the workstream: a subflow of the run's flow run (called from
inside the parent visit's task run, in that task's context, so Prefect records it under a
subflow task run of the run's flow run, as the tests check). The flow run ends in the state the child
ended in: Completed, Failed, or Cancelled for a child stopped at its deadline or terminated, with
the child's status, error and summary as its data. Nothing is persisted by Prefect: the child's
result lives in Ergon's store.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any

from prefect import flow
from prefect.runtime import flow_run
from prefect.states import Cancelled, Completed, Failed


@functools.cache
def _workstream_flow() -> Any:
    @flow(name="ergon-workstream", persist_result=False, validate_parameters=False, log_prints=False)
    async def ergon_workstream(launch_id: str, body: Callable[[str | None], Awaitable[dict[str, Any]]]) -> Any:
        """One workstream of an agent visit: the sub-agent's tool loop until it ends."""
        outcome = await body(str(flow_run.id) if flow_run.id else None)
        status = outcome.get("status")
        message = outcome.get("error") or status or "ended"
        if status == "completed":
            return Completed(message="completed", data=outcome)
        if status == "failed":
            return Failed(message=message, data=outcome)
        return Cancelled(message=message, data=outcome)

    return ergon_workstream


async def run_workstream(name: str, launch_id: str, body: Callable[[str | None], Awaitable[dict[str, Any]]]) -> Any:
    """Run ``body`` in its own flow run (named ``workstream <name>``); its final state."""
    return await _workstream_flow().with_options(flow_run_name=f"workstream {name}")(launch_id, body, return_state=True)
