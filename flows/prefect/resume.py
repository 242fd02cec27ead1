"""Resuming a paused run once its human task has a valid answer.

Called by the run owner when a task whose run waits is answered (:mod:`flows.runs.answers`; the
CLI and the dashboard answer through it), or registered as an ``on_answered`` hook; the
answer itself was validated and recorded by :func:`flows.humans.answer` before this runs, so
Prefect receives exactly the stored answer (and, where the form asks an answer code,
:data:`flows.humans.ERGON_CHECKED` in its place: Ergon checked who answered, and the engine
takes the store's answer for a task the store has answered).

The hook calls ``resume_flow_run`` on Prefect's own client (:func:`flows.prefect.api.client`),
configured by Prefect's settings like every other call Ergon makes to Prefect; the server
validates the input against the pause's ``RunInput`` schema and answers ``ACCEPT``, or
``REJECT``/``ABORT`` with its reason (the client returns those, it does not raise them).

An answer can arrive a moment before the waiting run has finished pausing (the task row exists
before Prefect's state is Paused and its input schema saved). The server then answers "not
paused" or "schema not found"; the hook retries for :data:`SETTLE_SECONDS` before giving up.
The same wait covers a task whose flow run is not known yet: a subflow that is starting, or a
run that continues after its process stopped and is on its way back to the task.
"""

from __future__ import annotations

import time
from typing import Any
from uuid import UUID

from flows.errors import ErgonError

#: How long to keep retrying while the waiting run is still on its way into the pause.
SETTLE_SECONDS = 15.0
_NOT_YET = ("not paused", "schema not found")


class ResumeFailed(ErgonError):
    """Prefect refused to resume the run (the reason is Prefect's)."""


def resume_answered(task: Any) -> None:
    """Hand the task's answer to the Prefect flow run that waits for it.

    The flow run is read from the task's row at every try: a run continuing after its process
    stopped re-enters the visit that asked and records its new flow run on the task (until then
    the task names none, so the answer never goes to the dead process's flow run)."""
    from flows import humans
    from flows.prefect.api import client
    from flows.store import tasks as task_store

    deadline = time.monotonic() + SETTLE_SECONDS
    proof = humans.proof_field(task.fields) if humans.needs_proof(task) else None
    with client() as prefect_client:  # the API first (client() resolves it), then Prefect's modules
        from prefect.client.schemas.responses import SetStateStatus

        while True:
            row = task_store.get_task(task.id)
            waiting = row.prefect_flow_run_id if row is not None else None  # the task's subflow, or its run's
            if not waiting:
                if not _on_its_way(row) or time.monotonic() > deadline:
                    raise ResumeFailed(f"task {task.id}: no Prefect flow run waits for it")
                time.sleep(0.25)
                continue
            run_input = dict(task.answer or {})
            if proof is not None:  # the form asks an answer code: Ergon checked who answered itself
                run_input[proof] = humans.ERGON_CHECKED
            result = prefect_client.resume_flow_run(UUID(waiting), run_input=run_input)
            if result.status == SetStateStatus.ACCEPT:
                return
            reason = getattr(result.details, "reason", None) or result.status.value
            if proof is not None and "additional properties" in str(reason).lower() and proof in str(reason):
                proof = None  # a run that paused before its form asked for a token
                continue
            if not any(s in str(reason).lower() for s in _NOT_YET) or time.monotonic() > deadline:
                raise ResumeFailed(f"Prefect did not resume flow run {waiting}: {reason}")
            time.sleep(0.25)


def _on_its_way(task: Any) -> bool:
    """Whether a flow run is about to wait for ``task``: its visit is still running (a subflow
    starting), or its run is starting again (resumed from its checkpoint, re-entering the visit)."""
    from flows.store import runs as run_store
    from flows.store import visits as visit_store

    if task is None:
        return False
    run = run_store.get_run(task.run_id)
    if run is not None and run.status in ("pending", "running"):
        return True
    visit = visit_store.get_visit(task.visit_id) if task.visit_id else None
    return visit is not None and visit.status == "running"


def register() -> None:
    """Make :func:`flows.humans.answer` resume runs (idempotent)."""
    from flows import humans

    if resume_answered not in humans.on_answered:
        humans.on_answered.append(resume_answered)
