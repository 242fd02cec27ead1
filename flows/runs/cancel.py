"""Cancelling a run, the same way from the CLI and the dashboard.

What cancelling does depends on where the run is:

* ``pending`` — nothing runs it yet: it becomes ``cancelled``.
* ``running`` — it becomes ``cancelling``; the process running it stops before its next node
  (the engine reads the flag at every checkpoint) and records ``cancelled``.
* ``paused`` — its open human tasks are closed as ``cancelled`` (nobody can answer them any
  more). When a live process is blocked waiting for the answer (heartbeat fresh), the run becomes
  ``cancelling`` and that process, which watches the store while it waits, ends the run. When
  nothing waits (the process is gone, or the run is suspended under a deployment), the run becomes
  ``cancelled`` here and its Prefect flow run is cancelled too, so a worker never resumes it.
* ``crashed`` — its process stopped; it would resume from its checkpoint (an answer to one of its
  tasks resumes it): it becomes ``cancelled`` and its open tasks close, so nobody answers them.
"""

from __future__ import annotations

from datetime import timedelta

from flows.errors import RunError
from flows.runs.answers import close_open_tasks
from flows.store import runs as run_store
from flows.store import tasks as task_store
from flows.store.models import RUN_TERMINAL, TASK_OPEN, utcnow

#: A paused run whose heartbeat is younger than this has a process waiting for its answer
#: (the waiting process beats every 15 s).
WAITING_HEARTBEAT = timedelta(seconds=45)


class AlreadyEnded(RunError):
    """The run already ended; there is nothing to cancel."""


def cancel(run_id: str, *, actor: str | None = None) -> str:
    """Cancel ``run_id``; return its new status (``cancelling`` or ``cancelled``)."""
    run = run_store.require_run(run_id)
    if run.status == "crashed":
        error = f"cancelled by {actor or 'someone'} after its process stopped"
        cancelled = run_store.set_run_status(run_id, "cancelled", error=error, expect=("crashed",))
        close_open_tasks(run_id, "the run was cancelled", actor=actor)
        return cancelled.status
    if run.status in RUN_TERMINAL:
        raise AlreadyEnded(f"run {run_id} already ended ({run.status})")
    if run.status == "paused":
        for task in task_store.tasks_for_run(run_id):
            if task.status in TASK_OPEN:
                task_store.close_task(task.id, "cancelled", actor=actor, reason="the run was cancelled")
        if process_waiting(run):
            return run_store.set_run_status(run_id, "cancelling").status
        if run.prefect_flow_run_id:
            from flows.prefect.cancel import cancel_flow_run

            cancel_flow_run(run.prefect_flow_run_id)
        return run_store.set_run_status(run_id, "cancelled", error=f"cancelled by {actor or 'someone'} while paused").status
    if run.status in ("running", "cancelling"):
        return run_store.set_run_status(run_id, "cancelling").status
    return run_store.set_run_status(run_id, "cancelled", error=f"cancelled by {actor or 'someone'}").status


def process_waiting(run) -> bool:
    """Whether a live process blocks in the paused run's wait (its heartbeat is fresh)."""
    last = run.heartbeat_at
    return last is not None and utcnow() - last < WAITING_HEARTBEAT
