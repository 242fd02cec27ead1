"""The run owner: everything that starts, continues or stops a run goes through this package.

* :mod:`~flows.runs.lifecycle` — compile, create (inputs validated once), start in this process,
  resume, prepare, detect_crashed.
* :mod:`~flows.runs.detached`  — start in the background (the dashboard, webhooks, chained runs,
  replays), and the dashboard's resume.
* :mod:`~flows.runs.cancel`    — cancel, whatever state the run is in.
* :mod:`~flows.runs.answers`   — answering a human task only while its run can take the answer
  (it waits; it stopped while waiting and resumes from its checkpoint; it is over).

The flow body itself — one execution, its record writer, the request that reaches it and the
input check — is the package below, :mod:`flows.execution`, which the Prefect adapter runs.

A definition is data (the Plan); a run is this package's (pydantic-graph's ``Graph`` vs
``GraphRun``). Prefect is reached through :mod:`flows.prefect`, imported only when a run executes.
"""

from flows.runs.cancel import AlreadyEnded, cancel
from flows.runs.detached import Started, replay, resume_detached, start_background, start_detached
from flows.runtime.effects import RunResult
from flows.runs.lifecycle import (
    ResumeRefused,
    StartRefused,
    compile_definition,
    create,
    detect_crashed,
    prepare,
    resumable,
    resume,
    snapshot_compiled,
    start,
)

__all__ = [
    "AlreadyEnded", "ResumeRefused", "RunResult", "StartRefused", "Started", "cancel", "compile_definition", "create",
    "detect_crashed", "prepare", "replay", "resumable", "resume", "resume_detached", "snapshot_compiled", "start",
    "start_background", "start_detached",
]
