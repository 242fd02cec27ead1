"""Plan → Prefect flow: one flow per definition, one task run per node visit.

:func:`build_flow` makes the flow of a Plan — name = definition name, version = the Plan's content
hash, typed keyword parameters from the Plan's input schema (a synthetic ``__signature__``, so
Prefect's UI renders a form and validates), ``__qualname__`` set so deployments can import it.
Flows are ``async``: sync flows pay a fixed ~1 s heartbeat join per run and per subflow.

The flow's body is :func:`flows.execution.body.execute`, Prefect-free, given a
:class:`PrefectBackend` (this flow run's id, the task-run executor, the pause port, subflows).
A Plan's flow is built once per process (:func:`build_flow`); the
:class:`~flows.execution.request.RunRequest` of a run started by the run owner or by a parent run
reaches its body through the caller's context (:func:`call_flow`); a flow Prefect starts by itself
(a deployment, its UI) makes its own.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any, Literal

import pydantic
from prefect import Flow, flow
from prefect.client.schemas.objects import FlowRun, State
from prefect.context import AsyncClientContext, FlowRunContext, TagsContext
from prefect.exceptions import TerminationSignal
from prefect.runtime import flow_run
from prefect.settings import get_current_settings
from prefect.states import Cancelled, Failed

from compiler.plan import Plan
from flows.prefect.artifacts import register as publish_artifacts
from flows.prefect.executor import PrefectExecutor
from flows.prefect.logs import install as install_run_logs
from flows.prefect.logs import run_listener
from flows.prefect.api import reachable
from flows.prefect.pause import PrefectPauses
from flows.prefect.watchdog import fail_fast, watch
from flows.execution.body import execute
from flows.execution.request import RunRequest
from flows.runtime.effects import Pauses, RunResult

_JSON_TO_PY: dict[str, Any] = {"string": str, "integer": int, "number": float, "boolean": bool, "array": list, "object": dict}


def _annotation(prop: dict[str, Any]) -> Any:
    if "enum" in prop and all(isinstance(v, (str, int, float, bool)) for v in prop["enum"]):
        return Literal[tuple(prop["enum"])]
    kind = prop.get("type")
    if isinstance(kind, list):
        kinds = [k for k in kind if k != "null"]
        base = _JSON_TO_PY.get(kinds[0], Any) if len(kinds) == 1 else Any
        return base | None if "null" in kind else base
    return _JSON_TO_PY.get(kind, Any)  # type: ignore[arg-type]


def flow_signature(plan: Plan) -> inspect.Signature:
    """Typed keyword-only parameters from the Plan's input schema (Prefect builds its form from it)."""
    schema = plan.input_schema
    required = set(schema.get("required", []))
    params = []
    for name, prop in schema.get("properties", {}).items():
        if not name.isidentifier():
            continue
        ann = _annotation(prop if isinstance(prop, dict) else {})
        if name in required:  # no default: a call without it is refused, never given a FieldInfo as its value
            ann = Annotated[ann, pydantic.Field(description=prop.get("description"))]
            default: Any = inspect.Parameter.empty
        else:
            default = pydantic.Field(prop.get("default"), description=prop.get("description"))
            ann = ann | None if ann is not Any else Any
        params.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=ann, default=default))
    return inspect.Signature(params)


def attribute_name(plan_name: str) -> str:
    """The module attribute a compiled flow is published under (deployment entrypoints)."""
    safe = "".join(c if c.isalnum() else "_" for c in plan_name)
    return f"flow_{safe}"


def as_flow(body: Callable[..., Awaitable[Any]], plan: Plan, name: str) -> Flow[..., Any]:
    """``body(**params)`` as the Prefect flow of ``plan``, importable as attribute ``name``."""
    body.__signature__ = flow_signature(plan)  # type: ignore[attr-defined]
    body.__name__ = name
    body.__qualname__ = name  # Prefect derives entrypoints from it (a `<locals>` name crashes a deployment run)
    body.__doc__ = plan.description
    return flow(name=plan.name, version=plan.version, description=plan.description,
                validate_parameters=True, persist_result=False, log_prints=False,
                result_storage=local_result_storage(),
                on_completion=[_prefect_has_the_end], on_failure=[_prefect_has_the_end])(body)


def local_result_storage() -> Path:
    """Where a flow's Prefect results would go: Prefect's own local default.

    Ergon persists no Prefect results (its store is the checkpoint), but a flow without a result
    storage of its own makes Prefect's engine ask the server for its default result storage each
    time it sets up the run's result store: a round trip, twice for every run
    (measured: ~3.5 ms each). Naming the local path, which is what Prefect falls back to, asks
    nobody; a server default result storage block would hold nothing of Ergon's either way."""
    return Path(get_current_settings().results.local_storage_path)


def _prefect_has_the_end(flow: Flow[..., Any], flow_run: FlowRun, state: State[Any]) -> None:  # noqa: ARG001
    """Prefect recorded the flow run's final state (its hooks run after that): the run it
    executed no longer names this process. A run still naming its dead process after it ended is
    one killed in between, whose flow run :func:`flows.runs.lifecycle.detect_crashed` settles.
    (A ``Cancelled`` end runs no hook: those runs are settled there, at one Prefect read each.)"""
    from flows.store import runs as run_store

    run_store.release_ended(prefect_flow_run_id=str(flow_run.id))


#: The request of the flow run about to start in this context (:func:`call_flow` sets it, the
#: flow's body takes it): a flow is built once per Plan, so a run's request cannot be bound into it.
_REQUEST: ContextVar[RunRequest | None] = ContextVar("ergon_run_request", default=None)
#: Flows built in this process, per Plan object: building a Prefect ``Flow`` builds the
#: pydantic model that validates its parameters (~8 ms of CPU), once per run before, and once per
#: visit of a sub-process node. Keyed by the object (kept alive here), never by its content.
_FLOWS: dict[int, tuple[Plan, Flow[..., Any]]] = {}
_FLOWS_MAX = 256


def build_flow(plan: Plan) -> Flow[..., Any]:
    """The Prefect flow of a Plan, built once per Plan object in this process.

    Its body executes the :class:`RunRequest` that :func:`call_flow` put in the caller's context,
    or, for a flow run Prefect started by itself, a request of trigger ``api``."""
    found = _FLOWS.get(id(plan))
    if found is not None and found[0] is plan:
        return found[1]

    async def _entry(**params: Any) -> Any:
        request = _REQUEST.get()
        token = _REQUEST.set(None)  # a flow this body starts carries its own request, never this one
        try:
            return await run_body(plan, params, request or RunRequest(trigger="api"))
        finally:
            _REQUEST.reset(token)

    made = as_flow(_entry, plan, attribute_name(plan.name))
    if len(_FLOWS) >= _FLOWS_MAX:
        _FLOWS.clear()
    _FLOWS[id(plan)] = (plan, made)
    return made


async def call_flow(plan: Plan, params: dict[str, Any], request: RunRequest) -> Any:
    """Run the flow of ``plan`` for ``request`` in this event loop; Prefect's final state.

    A run recorded before it starts (not a sub-process) gets a flow run named after its id, from
    the moment Prefect makes it when started outside any flow run: it is found in Prefect's UI by
    that id, and crash detection finds a flow run the run never got to record
    (:func:`flows.prefect.leftovers.unrecorded_flow_runs`)."""
    made: Any = build_flow(plan)
    token = _REQUEST.set(request)
    try:
        if request.run_id and request.parent_run_id is None:
            if FlowRunContext.get() is None:
                return await _run_named(made, params, request.run_id)
            # started from inside a flow run: Prefect's call makes it a subflow, named as it starts
            made = made.with_options(flow_run_name=request.run_id)
        return await made(**params, return_state=True)
    finally:
        _REQUEST.reset(token)


async def _run_named(made: Flow[..., Any], params: dict[str, Any], name: str) -> Any:
    """Make the flow run with its name, then hand it to Prefect's engine (as a runner hands it a
    deployment's flow run). Prefect's own call makes the flow run unnamed and renames it as the
    run starts (``flow_run_name``): a process killed in between left a ``Pending`` flow run no
    name could find. This costs no extra request: the rename's becomes the engine's update of a
    flow run it was given."""
    from prefect.flow_engine import run_flow_async
    from prefect.states import Pending
    from prefect.utilities.callables import get_call_parameters

    parameters = get_call_parameters(made.fn, (), params)  # with the defaults, as calling the flow does
    async with AsyncClientContext.get_or_create() as context:  # the engine takes this client too
        created = await context.client.create_flow_run(
            made, name=name, parameters=made.serialize_parameters(parameters), state=Pending(),
            tags=TagsContext.get().current_tags)
        return await run_flow_async(made, flow_run=created, parameters=parameters, return_type="state")


class PrefectBackend:
    """The run's :class:`~flows.execution.body.Backend` inside a Prefect flow run."""

    def __init__(self) -> None:
        self.flow_run_id = str(flow_run.id) if flow_run.id else None
        self.pauses: Pauses = PrefectPauses(self.flow_run_id)
        self.lost: str | None = None  # why the run's Prefect API was given up (flows.prefect.watchdog)
        publish_artifacts()  # the run's artifacts show in Prefect's UI too

    def lose(self, reason: str) -> None:
        self.lost = reason

    def interruption(self) -> str | None:
        return self.lost

    async def executor(self) -> PrefectExecutor:
        return await PrefectExecutor.for_run()

    async def run_subflow(self, plan: Plan, params: dict[str, Any], request: RunRequest) -> Any:
        return await call_flow(plan, params, request)

    async def run_workstream(self, name: str, launch_id: str, body: Callable[[str | None], Awaitable[Any]]) -> Any:
        """An agent's workstream in a flow run of its own (:mod:`flows.prefect.workstreams`)."""
        from flows.prefect.workstreams import run_workstream

        return await run_workstream(name, launch_id, body)

    def cancel_requested(self) -> bool:
        # A runner (serve, a worker) cancelling a flow run tells the process "cancel" on its
        # control channel before it sends SIGTERM; any other SIGTERM is the process being stopped.
        try:
            from prefect._internal.control_listener import get_intent
        except ImportError:  # an internal module: without it every stop counts as a crash
            return False
        return get_intent() == "cancel"


async def run_body(plan: Plan, params: dict[str, Any], request: RunRequest) -> Any:
    """The flow body: execute the run, and give Prefect its final state. The run's node events
    and Ergon's log lines go to the flow run's logs too (:mod:`flows.prefect.logs`).

    A top-level run executes beside the watchdog of its Prefect API (:mod:`flows.prefect.watchdog`);
    sub-runs share their process, and its watchdog. A run that ends by an interruption (the API
    lost, SIGTERM, Ctrl-C) while the API does not answer leaves Prefect's client without retries,
    so the process ends now rather than after the client's half hour of back-off."""
    install_run_logs()
    request = replace(request, listener=run_listener(request.listener))
    backend = PrefectBackend()
    if request.parent_run_id is not None:
        return to_state(await execute(plan, params, request, backend))
    # the body runs in this task, as Prefect's engine and a signal's cancellation expect; the
    # watchdog cancels this task when the API is lost
    this = asyncio.current_task()
    assert this is not None  # a flow body always runs in a task
    watchdog = asyncio.ensure_future(watch(this, str(get_current_settings().api.url or ""), backend.lose))
    try:
        return to_state(await execute(plan, params, request, backend))
    except (asyncio.CancelledError, KeyboardInterrupt, TerminationSignal):
        if backend.lost is None and not reachable():
            fail_fast()
        raise
    finally:
        watchdog.cancel()


def to_state(result: RunResult) -> Any:
    """A failed or cancelled run ends its flow run Failed or Cancelled (with the result as data)."""
    data = result.to_dict()
    if result.status == "failed":
        return Failed(message=result.error or "failed", data=data)
    if result.status == "cancelled":
        return Cancelled(message=result.error or "cancelled", data=data)
    return data


def run_in_process(plan: Plan, params: dict[str, Any], request: RunRequest) -> Any:
    """Call the flow of ``plan`` for ``request`` in this process, blocking; Prefect's final state."""
    import asyncio

    from prefect.context import SyncClientContext

    # One sync Prefect client for the whole run: without a client context Prefect makes a new one
    # each time its engine sets up the run's result store (twice a run, even with the flow's own
    # result storage, see local_result_storage), and each new client loads the CA bundle, ~20 ms
    # of CPU even for a plain-HTTP API.
    with SyncClientContext.get_or_create():
        return asyncio.run(call_flow(plan, params, request))
