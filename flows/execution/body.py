"""One execution of a run, inside its flow body: open the record, run the engine, record the end.

This is what every compiled flow does when Prefect calls it, written without Prefect: the
adapter (:mod:`flows.prefect.build`) calls :func:`execute` with a :class:`Backend` — the flow
run's id, the executor that makes each visit a task run, the ``Pauses`` port, and how to start a
sub-run — and turns the :class:`RunResult` into a Prefect state.

* The run's record is opened by :meth:`StoreRecorder.open`: the run the caller created, or the
  one already linked to this flow run (Prefect ran the same flow run again), or a new one (a
  deployment started it). A fresh run gets its initial context here; its inputs are validated
  here only when nobody did before (a run Prefect or a parent run started), so each run's inputs
  are checked exactly once.
* What happens around the execution is called through the ``run.*`` moments of
  :mod:`flows.moments`, so this package imports none of it: a run a schedule started acts for its
  trigger's ``as_user`` and is retried per the trigger's ``retry`` policy by re-entering this body
  (``run.around``, :mod:`flows.triggers.retries`); a template run gets its submissions
  (``run.opened``) and produces its output before it is recorded completed (``run.ending``,
  :mod:`flows.submissions`); a supervised run gets its supervisor (``run.supervisor``); when the
  run ends, the definitions whose ``on_complete`` trigger waits for it start (``run.ended``,
  :mod:`flows.triggers.chaining`, never raises).
* When its process is stopped (SIGTERM), or the orchestrator's API is lost while it executes
  (:mod:`flows.prefect.watchdog`), the run is recorded ``crashed`` — it resumes from its
  checkpoint, and a task it waited for keeps an answer for it (``run.recorded``,
  :mod:`flows.runs.answers`) — unless the orchestrator stopped the process to cancel the run.
"""

from __future__ import annotations

import asyncio
import os
import socket
from dataclasses import replace
from typing import Any, Protocol

from compiler.plan import Plan
from flows import moments
from flows.llm.records import REUSE_LOOKUP
from flows.execution.inputs import context_problems
from flows.execution.recorder import StoreRecorder
from flows.execution.request import RunRequest
from flows.runtime.effects import Pauses, RunResult, Services
from flows.runtime.engine import Engine, Executor
from flows.runtime.errors import ErrorKind, NodeFailed
from flows.settings import max_subprocess_depth
from flows.store import definitions as definition_store
from flows.tools import mcp_sessions

#: How often a running run's record is touched, so that a dead process can be told from a slow one.
HEARTBEAT_SECONDS = 15.0


class Backend(Protocol):
    """What the orchestrator gives one execution (the Prefect adapter implements it)."""

    #: the orchestrator's id of the flow run executing this body
    flow_run_id: str | None
    pauses: Pauses

    async def executor(self) -> Executor:
        """The executor of this run's visits (read once per run)."""
        ...

    async def run_subflow(self, plan: Plan, params: dict[str, Any], request: RunRequest) -> Any:
        """Run a child Plan as a sub-run; returns the orchestrator's final state (used for its message)."""
        ...

    def cancel_requested(self) -> bool:
        """Whether the orchestrator stopped this process to cancel the run (a worker or ``serve``
        cancelling a deployment run), rather than the process being stopped from outside."""
        ...

    def interruption(self) -> str | None:
        """Why the orchestrator's side ended this execution when it did (its API was lost), else
        None: the run is recorded crashed with this reason instead of "the process was stopped"."""
        ...


async def execute(plan: Plan, params: dict[str, Any], request: RunRequest, backend: Backend) -> RunResult:
    """The body of every compiled flow (see the module docstring)."""
    if moments.silenced():  # a test case's run on the real Prefect flow (``prefect: true``): as alone
        return await execute_alone(plan, params, request, backend)
    if request.catalog is None:  # read once: each attempt and the end's hooks see the same folder
        request.catalog = _default_catalog()

    def once() -> Any:
        return _execute_once(plan, params, request, backend)

    taken = moments.first("run.around", plan, request, backend.flow_run_id, once)
    result = await (taken if taken is not None else once())
    if result is not None:
        moments.call("run.ended", plan.name, result, request.catalog)
    return result


async def execute_alone(plan: Plan, params: dict[str, Any], request: RunRequest, backend: Backend) -> RunResult:
    """One execution of the run without what acts around it: no ``run.around`` (a schedule's
    retries) and no ``run.ended`` (``on_complete`` chains starting other definitions). A test
    case's run is this (:mod:`flows.testing`): it tests its definition, not what follows it."""
    if request.catalog is None:
        request.catalog = _default_catalog()
    return await _execute_once(plan, params, request, backend)


async def _execute_once(plan: Plan, params: dict[str, Any], request: RunRequest, backend: Backend) -> RunResult:
    inputs = {k: v for k, v in params.items() if v is not None}
    catalog = request.catalog
    recorder = StoreRecorder.open(plan, request=request, prefect_flow_run_id=backend.flow_run_id, inputs=inputs,
                                  host=socket.gethostname(), pid=os.getpid(), catalog_sources=catalog.sources)
    if recorder.fresh:
        context = {**plan.context_initial, **inputs, **request.overrides}
        problems = [] if request.inputs_checked else context_problems(plan, context)
        if problems:
            error = "invalid input: " + "; ".join(problems[:5])
            # A parent's input mapping or a schedule's fixed input is written in a definition (the
            # checker's business); a webhook's payload or a form's parameters come from outside.
            kind: ErrorKind = "definition" if request.parent_run_id or request.trigger == "schedule" else "world"
            recorder.end("failed", None, context, error, kind)
            return RunResult(recorder.run_id, "failed", None, context, error, kind)
        recorder.set_context(context)
    else:
        context = recorder.context
    template = moments.first("run.opened", plan, recorder.run_id, context)

    async def run_child(child: Plan, child_inputs: dict[str, Any], parent_visit_id: str | None,
                        run_type: str | None = None) -> RunResult:
        if request.depth + 1 > max_subprocess_depth():
            raise NodeFailed(f"sub-process `{child.name}` would nest {request.depth + 1} levels deep, more than the "
                             f"{max_subprocess_depth()} allowed (ERGON_MAX_SUBPROCESS_DEPTH): does it run its caller?",
                             kind="definition")
        # inputs the child refuses are the parent definition's fault: refused here, naming them, before
        # Prefect's own validation of the flow's parameters would fail the child with no kind
        problems = context_problems(child, {**child.context_initial, **child_inputs})
        if problems:
            raise NodeFailed(f"sub-process `{child.name}`: invalid input: " + "; ".join(problems[:5]), kind="definition")
        accepted = set(child.input_schema.get("properties", {}))
        child_request = RunRequest(trigger="subprocess", started_by=request.started_by, parent_run_id=recorder.run_id,
                                   parent_visit_id=parent_visit_id, depth=request.depth + 1, overrides=child_inputs,
                                   content_hash=definition_store.snapshot_definition({"plan": child.to_json()}), catalog=catalog,
                                   run_type=run_type)
        state = await backend.run_subflow(child, {k: v for k, v in child_inputs.items() if k in accepted}, child_request)
        return StoreRecorder.child_result(recorder.run_id, parent_visit_id, state)

    engine = Engine(plan=plan, context=context, recorder=recorder, executor=await backend.executor(),
                    services=Services(run_child=run_child, resolve_plan=catalog.resolve,
                                      resolve_interaction=catalog.interaction, environments=catalog.environments(),
                                      default_environment=plan.environment, run_id=recorder.run_id,
                                      started_by=request.started_by, process_name=plan.name,
                                      process_description=plan.description, run_budget=plan.budget,
                                      context_schema=plan.context_schema,
                                      listener=request.listener, pauses=backend.pauses, run_state=recorder,
                                      run_workstream=getattr(backend, "run_workstream", None),
                                      template=template),
                    listener=request.listener,
                    supervisor=moments.first("run.supervisor", plan, recorder.run_id, recorder.run_type,
                                             catalog.environments()))
    heartbeat = asyncio.ensure_future(_heartbeat(recorder))
    reuse_token = REUSE_LOOKUP.set(not recorder.fresh)  # resumed: model answers of unfinished visits are reused
    try:
        outcome = await engine.run()
    except (KeyboardInterrupt, asyncio.CancelledError):
        # The process is being stopped (SIGTERM, Ctrl-C): a crash the run resumes from, unless
        # the orchestrator stopped it to cancel the run. Ctrl-C becomes a cancel in flows.runs.lifecycle.start.
        if backend.cancel_requested():
            recorder.end("cancelled", None, engine.context, "cancelled by the orchestrator")
        else:
            recorder.end("crashed", None, engine.context,
                         backend.interruption() or f"interrupted: process {os.getpid()} was stopped", "world")
        raise
    except Exception as exc:  # a bug, not a node failure: the run record must still end
        recorder.end("failed", None, engine.context, f"{type(exc).__name__}: {exc}", "internal")
        raise
    finally:
        heartbeat.cancel()
        REUSE_LOOKUP.reset(reuse_token)
        await mcp_sessions.close_run(recorder.run_id)  # before the loop may end (flows.tools.mcp_sessions)
    problem = next((p for p in moments.call("run.ending", template, engine.context, outcome) if p), None)
    if problem is not None:  # before anyone sees the run completed
        outcome = replace(outcome, status="failed", error=problem, error_kind="definition")
    recorder.end(outcome.status, outcome.outcome, outcome.context, outcome.error, outcome.error_kind)
    return RunResult(recorder.run_id, outcome.status, outcome.outcome, outcome.context, outcome.error,
                     outcome.error_kind)


async def _heartbeat(recorder: StoreRecorder, every: float = HEARTBEAT_SECONDS) -> None:
    while True:
        await asyncio.sleep(every)
        recorder.heartbeat()


def _default_catalog() -> Any:
    """Runs started by Prefect (deployments, its UI) read the definitions folder themselves."""
    from flows.catalog import Catalog

    return Catalog.load()

