"""Resuming a paused run once its human task has a valid answer (an `on_answered` hook).

Registered by every channel that answers tasks in this process (the CLI, the dashboard); the
answer itself was validated and recorded by :func:`flows.humans.answer` before this runs, so
Prefect receives exactly the stored answer.
"""

from __future__ import annotations

from typing import Any


def resume_answered(task: Any) -> None:
    """Hand the task's answer to the paused Prefect flow run."""
    from flows.server import ensure_api_url
    from flows.settings import configure_prefect_env
    from flows.store import repo

    configure_prefect_env()
    ensure_api_url()
    from prefect.flow_runs import resume_flow_run

    waiting = task.prefect_flow_run_id  # the task's own subflow, or its run's flow run
    if not waiting:
        run = repo.get_run(task.run_id)
        waiting = run.prefect_flow_run_id if run else None
    if not waiting:
        raise RuntimeError(f"task {task.id}: its run has no Prefect flow run to resume")
    resume_flow_run(waiting, run_input=dict(task.answer or {}))


def register() -> None:
    """Make :func:`flows.humans.answer` resume runs (idempotent)."""
    from flows import humans

    if resume_answered not in humans.on_answered:
        humans.on_answered.append(resume_answered)
