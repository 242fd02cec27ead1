"""An agent's workstream (a delegated sub-agent) as a Prefect flow run of its own.

The engine's side (:mod:`flows.runtime.workstreams`) hands over the child's body; this runs it as
``ergon-workstream``, named after the workstream: a subflow of the run's flow run (called from
inside the parent visit's task run, in that task's context, so Prefect records it under a
subflow task run of the run's flow run, as the tests check). The flow run ends in the state the child
ended in: Completed, Failed, or Cancelled for a child stopped at its deadline or terminated, with
the child's status, error and summary as its data. Nothing is persisted by Prefect: the child's
result lives in Ergon's store.

Children launched together start one after the other, each once the one before it is running
(about 0.1-0.2 s each): Prefect creates a subflow's tracking task run in a deferred SQLite
transaction, so two created at once on a SQLite-backed server make one of them fail with
``SQLITE_BUSY`` (HTTP 503), which the client retries after 2, 4, 8 s. A child's deadline runs
from its launch, so that wait comes out of its time. Writes of the server's own (its event
persister) still collide now and then. Measured with ``benchmarks/workstream_starts.py`` (three
children, seven rounds on an idle local server): launched at once, 17 retried 503s and launch →
last child running in 2.71 s (median; max 7.15 s); one at a time, 4 retried 503s, 2.40 s (max
3.13 s). A Prefect server on PostgreSQL has no such collisions.
"""

from __future__ import annotations

import asyncio
import functools
import weakref
from collections.abc import Awaitable, Callable
from typing import Any

from prefect import flow
from prefect.runtime import flow_run
from prefect.states import Cancelled, Completed, Failed
from flows.prefect.pause import literal_run_name

#: one "a workstream is starting" lock per event loop (an asyncio lock belongs to one loop)
_STARTING: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = weakref.WeakKeyDictionary()


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


def _starting_lock() -> asyncio.Lock:
    loop = asyncio.get_running_loop()
    lock = _STARTING.get(loop)
    if lock is None:
        lock = _STARTING[loop] = asyncio.Lock()
    return lock


async def run_workstream(name: str, launch_id: str, body: Callable[[str | None], Awaitable[dict[str, Any]]]) -> Any:
    """Run ``body`` in its own flow run (named ``workstream <name>``); its final state.

    Holds the process's start lock until the flow run is running (its body began) or ended."""
    began = asyncio.Event()

    async def body_once_running(flow_run_id: str | None) -> dict[str, Any]:
        began.set()
        return await body(flow_run_id)

    child = _workstream_flow().with_options(flow_run_name=literal_run_name(f"workstream {name}"))
    async with _starting_lock():
        # a task copies this context: the subflow is still started from the parent visit's task run
        call = asyncio.ensure_future(child(launch_id, body_once_running, return_state=True))
        began_waiter = asyncio.ensure_future(began.wait())
        try:
            await asyncio.wait({call, began_waiter}, return_when=asyncio.FIRST_COMPLETED)
        except BaseException:
            call.cancel()
            raise
        finally:
            began_waiter.cancel()
    return await call
