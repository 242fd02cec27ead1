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
* A run a schedule started acts for its trigger's ``as_user`` and is retried per the trigger's
  ``retry`` policy by re-entering this body (:mod:`flows.triggers.retries`).
* When the run completes, the definitions whose ``on_complete`` trigger waits for it start
  (:mod:`flows.triggers.chaining`, never raises).
* When its process is stopped (SIGTERM) the run is recorded ``crashed`` — it resumes from its
  checkpoint, and a task it waited for keeps an answer for it (:mod:`flows.runs.answers`) —
  unless the orchestrator stopped the process to cancel the run.
"""

from __future__ import annotations

import asyncio
import os
import socket
from typing import Any, Protocol

from compiler.plan import Plan
from flows.llm.records import REUSE_LOOKUP
from flows.runs.inputs import context_problems
from flows.runs.recorder import StoreRecorder
from flows.runs.request import RunRequest
from flows.runtime.effects import Pauses, RunResult, Services
from flows.runtime.engine import Engine, Executor
from flows.runtime.supervision import Supervisor
from flows.runtime.errors import ErrorKind, NodeFailed
from flows.settings import max_subprocess_depth
from flows.store import definitions as definition_store
from flows.store import runs as run_store

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


async def execute(plan: Plan, params: dict[str, Any], request: RunRequest, backend: Backend) -> RunResult:
    """The body of every compiled flow (see the module docstring)."""
    if request.trigger == "schedule" and request.parent_run_id is None:
        from flows.triggers.retries import run_scheduled

        return await run_scheduled(plan, request, backend.flow_run_id,
                                   lambda: _execute_once(plan, params, request, backend))
    return await _execute_once(plan, params, request, backend)


async def _execute_once(plan: Plan, params: dict[str, Any], request: RunRequest, backend: Backend) -> RunResult:
    inputs = {k: v for k, v in params.items() if v is not None}
    catalog = request.catalog or _default_catalog()
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
    template = _template_run(plan, recorder.run_id, context)

    async def run_child(child: Plan, child_inputs: dict[str, Any], parent_visit_id: str | None,
                        run_type: str | None = None) -> RunResult:
        if request.depth + 1 > max_subprocess_depth():
            raise NodeFailed(f"sub-process `{child.name}` would nest {request.depth + 1} levels deep, more than the "
                             f"{max_subprocess_depth()} allowed (ERGON_MAX_SUBPROCESS_DEPTH): does it run its caller?",
                             kind="definition")
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
                    listener=request.listener, supervisor=_supervisor(plan, request, recorder, catalog))
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
            recorder.end("crashed", None, engine.context, f"interrupted: process {os.getpid()} was stopped", "world")
        raise
    except Exception as exc:  # a bug, not a node failure: the run record must still end
        recorder.end("failed", None, engine.context, f"{type(exc).__name__}: {exc}", "internal")
        raise
    finally:
        heartbeat.cancel()
        REUSE_LOOKUP.reset(reuse_token)
    if template is not None and outcome.status == "completed":
        from dataclasses import replace

        from flows.submissions.outputs import produce

        problem = produce(template, engine.context)  # its output_type, before anyone sees the run completed
        if problem is not None:
            outcome = replace(outcome, status="failed", error=problem, error_kind="definition")
    recorder.end(outcome.status, outcome.outcome, outcome.context, outcome.error, outcome.error_kind)
    from flows.triggers.chaining import dispatch

    dispatch(definition=plan.name, run_id=recorder.run_id, status=outcome.status, outcome=outcome.outcome,
             context=outcome.context, catalog=catalog)
    return RunResult(recorder.run_id, outcome.status, outcome.outcome, outcome.context, outcome.error,
                     outcome.error_kind)


def _template_run(plan: Plan, run_id: str, context: dict[str, Any]) -> Any:
    """A template run's submissions; a run nobody recorded an input submission for (a deployment's,
    a schedule's) records its ``input`` as one first."""
    from flows.submissions import template_runs

    if not template_runs.is_template(plan):
        return None
    run = run_store.require_run(run_id)
    if run.input_submission_id is None and "input" in context:
        sid = template_runs.record_input(plan, context, created_by=run.started_by)
        run_store.update_run(run_id, input_submission_id=sid)
        run.input_submission_id = sid
    return template_runs.TemplateRun.for_run(plan, run)


def _supervisor(plan: Plan, request: RunRequest, recorder: StoreRecorder, catalog: Any) -> Supervisor | None:
    """The supervisor of a supervised run (:mod:`flows.runtime.llm_supervisor`), else None."""
    if recorder.run_type != "supervised":
        return None
    from flows.runtime.llm_supervisor import LlmSupervisor
    from flows.runtime.supervision import policy
    from flows.store import run_events

    def inbox() -> list[tuple[str | None, str]]:
        return [(m.actor, str((m.args or {}).get("text", ""))) for m in run_events.take_messages(recorder.run_id)]

    # the definition's `metadata.supervisor.model`, else ERGON_MODEL, else the offline model (as
    # every model call): it travels with the run's snapshot, so a resumed run asks the same model
    model = policy(plan, None).get("model") or None
    return LlmSupervisor(run_id=recorder.run_id, process_name=plan.name, description=plan.description, model=model,
                         environments=catalog.environments(), inbox=inbox)


async def _heartbeat(recorder: StoreRecorder, every: float = HEARTBEAT_SECONDS) -> None:
    while True:
        await asyncio.sleep(every)
        recorder.heartbeat()


def _default_catalog() -> Any:
    """Runs started by Prefect (deployments, its UI) read the definitions folder themselves."""
    from flows.catalog import Catalog

    return Catalog.load()

