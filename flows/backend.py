"""Plan → Prefect: one flow per definition, one task run per node visit.

This is the only module of the runtime that imports prefect. It builds:

* a **flow** per Plan — name = definition name, version = the Plan's content hash, typed
  keyword parameters from the Plan's input schema (a synthetic ``__signature__``, so Prefect's
  UI renders a form and validates), ``__qualname__`` set so deployments can import it. Flows are
  ``async``: sync flows pay a fixed ~1 s heartbeat join per run and per subflow.
* an **executor** that runs each visit as a task run named after the node (``node[item]``
  inside fan-outs), tagged with its type and lane (see :mod:`flows.tagging` for how without
  Prefect's per-task concurrency lease), with the node's retry policy mapped onto
  Prefect's retries (exponential backoff with a cap, jitter, timeout, and a retry condition
  that retries only the listed error kinds and never a rejected write).

Task results are not persisted and nothing is cached by Prefect: Ergon's store is the checkpoint
(see :mod:`flows.runtime.engine`), which is what makes resume exact — and avoids Prefect's
input-hash cache returning an old result for a loop's second visit.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import os
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from flows.settings import TASK_DEFAULTS, configure_prefect_env

configure_prefect_env()

import pydantic  # noqa: E402
from prefect import Flow, flow, task  # noqa: E402
from prefect.cache_policies import NO_CACHE  # noqa: E402
from prefect.context import TaskRunContext  # noqa: E402
from prefect.states import Cancelled, Failed  # noqa: E402

from compiler.plan import Plan, PlanNode  # noqa: E402
from flows.llm.records import REUSE_LOOKUP  # noqa: E402
from flows.runtime.bodies import ChildResult, Services  # noqa: E402
from flows.runtime.context import schema_errors  # noqa: E402
from flows.runtime.engine import Engine, Listener  # noqa: E402
from flows.runtime.errors import BudgetExhausted, InputRejected, NoTransition, RunCancelled, WriteRejected  # noqa: E402
from flows.runtime.recording import StoreRecorder  # noqa: E402
from flows.tagging import limited_tags, node_tags, record_tags, split_tags  # noqa: E402

#: Errors that retrying cannot fix.
NEVER_RETRIED = (WriteRejected, NoTransition, RunCancelled, InputRejected, BudgetExhausted)
#: Error kinds a retry policy may name, beyond exception class names.
ERROR_KINDS: dict[str, tuple[str, ...]] = {
    "timeout": ("TimeoutError", "TimedOut", "ReadTimeout", "ConnectTimeout"),
    "rate_limit": ("RateLimitError", "TooManyRequests"),
    "server_error": ("InternalServerError", "ServiceUnavailableError", "APIError", "BadGatewayError"),
    "connection": ("ConnectionError", "APIConnectionError", "ConnectError"),
}


@dataclass
class RunRequest:
    """How the current flow call was asked for (set by the CLI, the parent flow, or resume)."""

    run_id: str | None = None
    trigger: str = "manual"
    started_by: str | None = None
    parent_run_id: str | None = None
    parent_visit_id: str | None = None
    overrides: dict[str, Any] = field(default_factory=dict)
    content_hash: str | None = None
    listener: Listener | None = None
    #: the definitions the run resolves sub-processes, interactions and environments from
    catalog: Any = None


REQUEST: contextvars.ContextVar[RunRequest | None] = contextvars.ContextVar("ergon_run_request", default=None)
#: last exception per task run id, read by the retry condition
_LAST_ERROR: dict[Any, BaseException] = {}


# ---------------------------------------------------------------------------------- tasks
@task(name="node", cache_policy=NO_CACHE, task_run_name="{run_name}", **TASK_DEFAULTS)
async def node_visit(run_name: str, attempt_fn: Callable[[int], Awaitable[Any]], tags: tuple[str, ...] = ()) -> Any:
    """One visit attempt; Prefect calls it again for each retry. ``tags`` are written onto the
    task-run record here instead of being Prefect task tags (see :mod:`flows.tagging`)."""
    ctx = TaskRunContext.get()
    attempt = ctx.task_run.run_count if ctx else 1
    if ctx and tags:
        record_tags(ctx.task_run, list(tags))
    try:
        return await attempt_fn(max(attempt, 1))
    except BaseException as exc:
        if ctx:
            _LAST_ERROR[ctx.task_run.id] = exc
        raise


def _retry_condition(kinds: tuple[str, ...]) -> Callable[..., bool]:
    names = {n for k in kinds for n in ERROR_KINDS.get(k, (k,))}

    def should_retry(task_obj: Any, task_run: Any, state: Any) -> bool:
        exc = _LAST_ERROR.pop(task_run.id, None)
        if isinstance(exc, NEVER_RETRIED):
            return False
        if not names:
            return True
        seen = {cls.__name__ for cls in type(exc).__mro__} if exc is not None else {state.name}
        return bool(seen & names)

    return should_retry


def _delays(policy: Any) -> list[float]:
    """Exponential backoff, capped: delay, delay*b, delay*b², ... (one per retry)."""
    return [min(policy.delay_seconds * policy.backoff**i, policy.max_delay_seconds) for i in range(policy.retries)]


#: Configured Prefect tasks by (node id, Prefect tags, retry policy), shared by every run of the
#: process: building a Prefect ``Task`` reads its function's source, ~1-3 ms per node.
_TASKS: dict[tuple[str, tuple[str, ...], str], Any] = {}
_TASKS_MAX = 4096


def _configured_task(node: PlanNode, prefect_tags: list[str]) -> Any:
    policy = node.retry
    key = (node.id, tuple(prefect_tags), repr(policy))
    found = _TASKS.get(key)
    if found is None:
        if len(_TASKS) >= _TASKS_MAX:
            _TASKS.clear()
        found = _TASKS[key] = node_visit.with_options(
            name=node.id,
            tags=prefect_tags,
            retries=policy.retries,
            retry_delay_seconds=_delays(policy) or 0,
            retry_jitter_factor=policy.jitter or None,
            timeout_seconds=policy.timeout_seconds,
            retry_condition_fn=_retry_condition(tuple(policy.retry_on)),
        )
    return found


class PrefectExecutor:
    """Runs visits as Prefect task runs, tagged per :mod:`flows.tagging`.

    ``limited`` is the set of tags that have a Prefect concurrency limit (``None``: treat every tag
    as limited), read once per run by :meth:`for_run`."""

    def __init__(self, limited: frozenset[str] | None = None) -> None:
        self._limited = limited

    @classmethod
    async def for_run(cls) -> PrefectExecutor:
        return cls(await limited_tags())

    async def visit(self, node: PlanNode, run_name: str, attempt_fn: Callable[[int], Awaitable[Any]]) -> Any:
        prefect_tags, recorded = split_tags(node_tags(node), self._limited)
        return await _configured_task(node, prefect_tags)(run_name, attempt_fn, tuple(recorded))


# ---------------------------------------------------------------------------------- flows
_JSON_TO_PY: dict[str, Any] = {"string": str, "integer": int, "number": float, "boolean": bool, "array": list, "object": dict}


def _annotation(prop: dict[str, Any]) -> Any:
    if "enum" in prop and all(isinstance(v, (str, int, float, bool)) for v in prop["enum"]):
        return Literal[tuple(prop["enum"])]  # type: ignore[misc]
    kind = prop.get("type")
    if isinstance(kind, list):
        kinds = [k for k in kind if k != "null"]
        base = _JSON_TO_PY.get(kinds[0], Any) if len(kinds) == 1 else Any
        return base | None if "null" in kind else base
    return _JSON_TO_PY.get(kind, Any)


def flow_signature(plan: Plan) -> inspect.Signature:
    """Typed keyword-only parameters from the Plan's input schema (Prefect builds its form from it)."""
    schema = plan.input_schema
    required = set(schema.get("required", []))
    params = []
    for name, prop in schema.get("properties", {}).items():
        if not name.isidentifier():
            continue
        ann = _annotation(prop if isinstance(prop, dict) else {})
        if name in required:
            default = pydantic.Field(..., description=prop.get("description"))
        else:
            default = pydantic.Field(prop.get("default"), description=prop.get("description"))
            ann = ann | None if ann is not Any else Any
        params.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=ann, default=default))
    return inspect.Signature(params)


def attribute_name(plan_name: str) -> str:
    """The module attribute a compiled flow is published under (deployment entrypoints)."""
    safe = "".join(c if c.isalnum() else "_" for c in plan_name)
    return f"flow_{safe}"


def build_flow(plan: Plan) -> Flow:
    """The Prefect flow of a Plan."""

    async def _entry(**params: Any) -> Any:
        return await execute(plan, params)

    _entry.__signature__ = flow_signature(plan)  # type: ignore[attr-defined]
    _entry.__name__ = attribute_name(plan.name)
    _entry.__qualname__ = attribute_name(plan.name)  # deployments import the flow by this name
    _entry.__doc__ = plan.description
    return flow(
        _entry, name=plan.name, version=plan.version, description=plan.description,
        validate_parameters=True, persist_result=False, log_prints=False,
    )


async def execute(plan: Plan, params: dict[str, Any]) -> Any:
    """The body of every compiled flow: find or create the run, run the engine, record the end."""
    request = REQUEST.get()
    if request is not None and request.trigger == "schedule" and request.parent_run_id is None:
        # Issue 7: a run a schedule started acts for its trigger's `as_user` and is retried per the
        # trigger's `retry` policy by re-entering this body (see flows.triggers.retries).
        from flows.triggers.retries import run_scheduled

        return await run_scheduled(plan, params, request, _execute_once)
    return await _execute_once(plan, params)


async def _execute_once(plan: Plan, params: dict[str, Any]) -> Any:
    from prefect.runtime import flow_run

    request = REQUEST.get() or RunRequest(trigger="api")  # started by Prefect (a deployment or its UI)
    prefect_id = str(flow_run.id) if flow_run.id else None
    inputs = {k: v for k, v in params.items() if v is not None}
    recorder = StoreRecorder.open(plan, request=request, prefect_flow_run_id=prefect_id, inputs=inputs,
                                  host=socket.gethostname(), pid=os.getpid())
    if recorder.fresh:
        context = {**plan.context_initial, **inputs, **request.overrides}
        problems = schema_errors(plan.context_schema, context)
        missing = [k for k in plan.input_schema.get("required", []) if k not in context]
        if missing:
            problems.insert(0, f"missing required input(s): {', '.join(missing)}")
        if problems:
            error = "invalid input: " + "; ".join(problems[:5])
            recorder.end("failed", None, context, error)
            return Failed(message=error)
        recorder.set_context(context)
    else:
        context = recorder.context
    catalog = request.catalog or _default_catalog()

    async def run_child(child: Plan, inputs: dict[str, Any], parent_visit_id: str | None) -> ChildResult:
        child_flow = build_flow(child)
        accepted = set(child.input_schema.get("properties", {}))
        token = REQUEST.set(RunRequest(trigger="subprocess", started_by=request.started_by, parent_run_id=recorder.run_id,
                                       parent_visit_id=parent_visit_id, overrides=inputs, listener=None,
                                       content_hash=_snapshot(child), catalog=catalog))
        try:
            result = await child_flow(**{k: v for k, v in inputs.items() if k in accepted}, return_state=True)
        finally:
            REQUEST.reset(token)
        return StoreRecorder.child_result(recorder.run_id, parent_visit_id, result)

    listener = request.listener or (lambda *a: None)
    engine = Engine(plan=plan, context=context, recorder=recorder, executor=await PrefectExecutor.for_run(),
                    services=Services(run_child=run_child, resolve_plan=catalog.resolve,
                                      resolve_interaction=catalog.interaction, environments=catalog.environments(),
                                      default_environment=plan.environment, run_id=recorder.run_id,
                                      started_by=request.started_by, process_name=plan.name,
                                      process_description=plan.description, run_budget=plan.budget,
                                      listener=listener),
                    listener=listener)
    heartbeat = asyncio.ensure_future(_heartbeat(recorder))
    reuse_token = REUSE_LOOKUP.set(not recorder.fresh)  # resumed: model answers of unfinished visits are reused
    try:
        outcome = await engine.run()
    except (KeyboardInterrupt, asyncio.CancelledError):
        recorder.end("cancelled", None, engine.context, "interrupted")
        raise
    except Exception as exc:  # a bug, not a node failure: the run record must still end
        recorder.end("failed", None, engine.context, f"{type(exc).__name__}: {exc}")
        raise
    finally:
        heartbeat.cancel()
        REUSE_LOOKUP.reset(reuse_token)
    recorder.end(outcome.status, outcome.outcome, outcome.context, outcome.error)
    # Issue 7: start the definitions whose on_complete trigger waits for this one (never raises).
    from flows.triggers.chaining import dispatch

    dispatch(definition=plan.name, run_id=recorder.run_id, status=outcome.status, outcome=outcome.outcome,
             context=outcome.context, catalog=catalog)
    result = {"run_id": recorder.run_id, "status": outcome.status, "outcome": outcome.outcome,
              "context": outcome.context, "error": outcome.error}
    if outcome.status == "failed":
        return Failed(message=outcome.error or "failed", data=result)
    if outcome.status == "cancelled":
        return Cancelled(message=outcome.error or "cancelled", data=result)
    return result


def _snapshot(plan: Plan) -> str | None:
    """Pin a child's compiled Plan as its run snapshot (children may be inline or by name)."""
    from flows.store import repo

    return repo.snapshot_definition({"plan": plan.to_json()})


async def _heartbeat(recorder: StoreRecorder, every: float = 15.0) -> None:
    while True:
        await asyncio.sleep(every)
        recorder.heartbeat()


def _default_catalog() -> Any:
    """Runs started by Prefect (deployments, its UI) read the definitions folder themselves."""
    from flows.catalog import Catalog

    return Catalog.load()
