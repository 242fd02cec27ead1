"""What a signed-in user can do to a run from the dashboard, through the CLI's own functions.

* **resume** a failed or crashed run: ``ergon runs resume RUN_ID`` in a detached process (it
  runs the rest of the flow, which must not block Streamlit nor die with it); its output goes to
  ``ERGON_HOME/logs/run-<id>.resume.log``.
* **cancel**: :func:`flows.cancel.cancel_run`, as ``ergon runs cancel`` does.
* **replay**: a new run of the same definition with the same inputs
  (:func:`flows.launch.start_detached`, trigger ``replay``).
* **start** a run from the Definitions page's form (trigger ``manual``).
"""

from __future__ import annotations

from typing import Any


def resume(run: Any, user: str) -> None:
    """Start ``ergon runs resume`` for a failed or crashed run; raises ValueError otherwise."""
    from flows.launch import spawn_ergon

    if run.status not in ("failed", "crashed"):
        raise ValueError(f"run {run.id} is {run.status}; only failed or crashed runs resume")
    spawn_ergon(["runs", "resume", run.id], log_name=f"run-{run.id}.resume.log", user=user)


def cancel(run_id: str, user: str) -> str:
    """Cancel a run; the new status. Raises ``flows.cancel.AlreadyEnded``."""
    from flows.cancel import cancel_run

    return cancel_run(run_id, actor=user)


def replay(run: Any, user: str) -> str:
    """A new run of ``run``'s definition with its inputs; the new run id. A run of a published
    version replays that version; a run of the draft replays the draft as it is now. Raises
    ``flows.launch.StartRefused`` with the problems (the draft may have changed since)."""
    from flows.launch import start_detached

    return start_detached(run.definition_name, dict(run.inputs or {}), started_by=user, trigger="replay",
                          version=run.definition_version)


def start(name: str, inputs: dict[str, Any], user: str) -> str:
    """Start a run of definition ``name``; the run id. Raises ``flows.launch.StartRefused``."""
    from flows.launch import start_detached

    return start_detached(name, inputs, started_by=user, trigger="manual")
