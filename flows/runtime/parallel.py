"""Whether the current node visit may run beside others in the same Prefect flow run.

Prefect allows one pause per flow run at a time: a second ``pause_flow_run`` while the first
waits raises (see the Prefect notes). Visits that can overlap — foreach/branch items and the
nodes of a pipeline DAG — are marked here by the engine, and a human task asked from such a
visit waits in a subflow of its own, which pauses and resumes independently. A visit of a
process state machine runs alone, so its task pauses the run's own flow run (cheaper, and the
run itself shows as paused in Prefect's UI).

A context variable, because the engine runs overlapping visits as asyncio tasks, each with its
own copy of the context.
"""

from __future__ import annotations

import contextvars

IN_PARALLEL: contextvars.ContextVar[bool] = contextvars.ContextVar("ergon_in_parallel", default=False)


def mark_parallel() -> None:
    """Mark the current asyncio task's visits as possibly overlapping others."""
    IN_PARALLEL.set(True)
