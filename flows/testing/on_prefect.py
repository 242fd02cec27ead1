"""A case with ``prefect: true``: its run goes through the real Prefect flow, as ``ergon run`` runs one.

The other cases run the flow body in-process with :mod:`flows.testing.backend`; these call the
Plan's compiled Prefect flow the way the run owner does (:func:`flows.prefect.build.call_flow`,
what ``ergon run`` calls): a flow run named after the run's id, each visit a task run, sub-processes
as subflows, a human task a pause of the flow run. Only the API is prepared here, once per
invocation and only when a chosen case asks for Prefect (:func:`prepare`): the API the user
configured, else Ergon's own local server, decided and started exactly as ``ergon run`` does
(:func:`flows.prefect.server.ensure_api`).

What stays the same as in-process: the case's stand-ins (a context variable, which the flow
engine, its task runs and the worker threads of sync tools all inherit), the temporary store the
run is recorded in, the rules a task's answer is held to, and what is compared.

**People, on the real path.** While the flow runs, :func:`execute` watches the store every
:data:`WATCH_SECONDS` for the open human tasks of the case's run and of its sub-runs. A task the
case answers (``mocks.tasks``, the same answer for the same visit as in-process) is answered as
``ergon tasks answer`` answers it (:func:`flows.runs.answers.answer`, in a worker thread): checked
and recorded, then handed to the paused Prefect flow run, which Prefect resumes. A task the case
does not answer, or whose answer is refused (for who gives it — the node is then in ``refused`` —
or for its fields, which on this path leaves the task open too), is the case's end: the run is
``paused`` and nothing would ever answer it. What the run did is taken at that moment (status
``paused``, its context, the reason as its error), and the run is then cancelled the way ``ergon
runs cancel`` cancels a paused run, so the waiting flow run ends ``Cancelled`` within a second
and the case never hangs.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from compiler.plan import Plan
from flows.execution.request import RunRequest
from flows.testing.backend import AnsweringPauses, CasePaused

#: How often the store is read for open tasks while a case's flow runs.
WATCH_SECONDS = 0.1
#: How long a cancelled run may take to end its flow run before the case stops waiting for it.
STOP_SECONDS = 60.0


@dataclass
class Ended:
    """How the run of a ``prefect: true`` case ended, as the case compares it."""

    status: str
    outcome: str | None
    context: dict[str, Any]
    error: str | None
    #: the Prefect flow run of the case's run (None when Prefect made none)
    flow_run_id: str | None = None


def prepare() -> str:
    """Point this process at the Prefect API ``ergon run`` would use (starting Ergon's local
    server when nothing names one); its address."""
    from flows.prefect.server import ensure_api

    return ensure_api().url


async def execute(plan: Plan, inputs: dict[str, Any], request: RunRequest, pauses: AnsweringPauses) -> Ended:
    """Run ``request`` (whose ``run_id`` is set) through the Plan's Prefect flow, answering its
    human tasks from ``pauses`` (see the module docstring)."""
    from flows.prefect.build import call_flow
    from flows.store import runs as run_store

    assert request.run_id is not None, "a test case's run is named before it starts"
    accepted = set(plan.input_schema.get("properties", {}))
    request.overrides = {k: v for k, v in inputs.items() if k not in accepted}
    flow = asyncio.ensure_future(call_flow(plan, {k: v for k, v in inputs.items() if k in accepted}, request))
    watcher = _Watcher(request.run_id, pauses)
    paused: tuple[CasePaused, Any] | None = None
    while not flow.done():
        await asyncio.wait({flow}, timeout=WATCH_SECONDS)
        if flow.done() or paused is not None:
            continue
        found = await watcher.unanswered()
        if found is not None:
            paused = (found[0], run_store.get_run(request.run_id))  # what the run did when it paused
            _stop(request.run_id, found[1], request.started_by)
            await asyncio.wait({flow}, timeout=STOP_SECONDS)
            if not flow.done():  # the flow run did not take the cancel: give it up, the case is decided
                flow.cancel()
    if paused is not None:
        if not flow.cancelled():
            flow.exception()  # retrieved: the end of a cancelled run is not the case's result
        run = paused[1]
        return Ended("paused", None, dict(run.context or {}) if run is not None else {}, str(paused[0]),
                     run.prefect_flow_run_id if run is not None else None)
    state = flow.result()
    run = run_store.get_run(request.run_id)
    if run is None or run.status in ("pending", "running", "paused"):  # Prefect refused it before its body ran
        message = getattr(state, "message", None) or "the flow did not start"
        return Ended("failed", None, dict(run.context or {}) if run is not None else {}, message,
                     run.prefect_flow_run_id if run is not None else None)
    return Ended(run.status, run.outcome, dict(run.context or {}), run.error, run.prefect_flow_run_id)


class _Watcher:
    """The open human tasks of the case's run and its sub-runs, each answered once from the case."""

    def __init__(self, run_id: str, pauses: AnsweringPauses) -> None:
        self._run_id = run_id
        self._pauses = pauses
        self._seen: set[str] = set()

    async def unanswered(self) -> tuple[CasePaused, str] | None:
        """Answer the tasks opened since the last look; the first one the case leaves waiting
        (and the run it belongs to), else None."""
        from flows import humans
        from flows.runs import answers

        for task in _open_tasks(self._run_id):
            if task.id in self._seen:
                continue
            self._seen.add(task.id)
            given = self._pauses.answer_for(task)
            if given is None:
                return self._pauses.unanswered(task), task.run_id
            who = self._pauses.person(task, given)
            try:
                await asyncio.to_thread(answers.answer, task.id, who, given.answer, "api")
            except humans.TaskRefused as exc:
                if not exc.errors:  # refused for who answers: the task stays open, as for any channel
                    self._pauses.refused.append(task.node_id)
                    return CasePaused(task.node_id, f"the answer of `{who.name}` was refused: {exc}"), task.run_id
                return CasePaused(task.node_id, f"the test's answer was refused: {exc}"), task.run_id
        return None


def _open_tasks(run_id: str) -> list[Any]:
    """The open tasks of ``run_id`` and of the sub-runs below it, oldest first."""
    from flows.store import runs as run_store
    from flows.store import tasks as task_store
    from flows.store.models import TASK_OPEN

    found, runs = [], [run_id]
    while runs:
        current = runs.pop(0)
        found += [t for t in task_store.tasks_for_run(current) if t.status in TASK_OPEN]
        runs += [child.id for child in run_store.child_runs(current)]
    return sorted(found, key=lambda t: t.created_at)


def _stop(run_id: str, waiting_run_id: str, actor: str | None) -> None:
    """Cancel the case's run, and the sub-run whose task waits, as ``ergon runs cancel`` does."""
    from flows.runs.cancel import AlreadyEnded, cancel

    for target in dict.fromkeys([run_id, waiting_run_id]):
        try:
            cancel(target, actor=actor)
        except AlreadyEnded:
            continue
