"""Deployment entrypoints: one compiled Prefect flow per definition, as an attribute of this module.

A Prefect worker (or ``prefect deploy``) imports a deployment's entrypoint
``flows.prefect.deployments.<attribute>`` (a module path: Prefect's ``EntrypointType.MODULE_PATH``,
so it resolves wherever Ergon is installed, whatever the project folder) and runs the flow it
finds there. The attributes do not
exist until asked for: the module-level :func:`__getattr__` (PEP 562) reads the definitions
folder, compiles the definition the attribute names, and caches its flow. So the same definitions
run unchanged under any worker that shares the folder and the code — no generated Python.

Attribute names (:func:`entry_attribute`):

* ``flow_<name>`` — the definition as it is in the folder when the run starts (the draft,
  "latest");
* ``flow_<name>__v<N>`` — its published version ``N``, pinned at deploy time: the run executes
  that content whatever the folder holds now.

The flows built here differ from :func:`flows.prefect.build.build_flow` in one way: their body
tells the engine how it was started (trigger ``schedule`` for runs Prefect's scheduler created,
``api`` otherwise), pins the executed content as the run's snapshot and records the published
version. Everything else — typed parameters, the ``__qualname__`` set to the attribute name
(Prefect derives entrypoints from it), find-or-create of the Ergon run by Prefect flow-run id, so
a re-entered flow body (a suspended run resumed, a retried run) continues from its checkpoint —
is the same. The body function is defined in this module on purpose: Prefect's ``serve()`` takes
a flow's entrypoint from the module its function is defined in.

:func:`deployment_entry` builds the ``prefect.yaml`` entry of a definition (see
:mod:`flows.cli.deploy`); :func:`ensure_work_pool` and :func:`register_deployments` make Prefect
know them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, cast

from flows.heap import heavy_imports

# Prefect's flow-run process imports this module first thing: its imports (the engine, the store)
# run with the collector paused, as everything :func:`_build` does (see flows.heap).
with heavy_imports():
    from prefect.runtime import flow_run

    from flows.prefect.build import as_flow, attribute_name, run_body
    from flows.prefect.launch import ergon_run_of_current_flow_run
    from flows.prefect.logs import install as install_run_logs
    from flows.prefect.schedules import prefect_schedules, schedule_slug_of_current_run
    from flows.execution.request import RunRequest
    from flows.store import db
    from flows.store import definitions as definition_store
    from flows.store import runs as run_store
    from flows.store.models import RunTrigger

# A worker's flow-run process: Ergon's log lines reach the flow run's logs, and a run suspended
# for a person is logged as waiting, not as an error (flows.prefect.logs).
install_run_logs()

#: The work pool deployments go to unless ``--work-pool`` says otherwise.
DEFAULT_WORK_POOL = "ergon"
#: Where deployments point: this module, by its import path (a file path would only resolve in a
#: checkout of Ergon; the definitions come from the folder the worker starts flow runs in).
ENTRYPOINT_MODULE = "flows.prefect.deployments"
_PINNED = re.compile(r"^(?P<base>flow_\w+?)__v(?P<version>\d+)$")
_flows: dict[str, Any] = {}


@dataclass(frozen=True)
class Target:
    """What a deployment runs: a definition, and a published version or the folder's draft."""

    name: str
    version: int | None = None  # None: the definition as it is in the folder when the run starts


def entry_attribute(name: str, version: int | None = None) -> str:
    """The attribute of this module that holds the flow of ``name`` (pinned to ``version``)."""
    base = attribute_name(name)
    return base if version is None else f"{base}__v{version}"


def entrypoint(name: str, version: int | None = None) -> str:
    """The deployment entrypoint of a definition (``module.attribute``, Prefect's module-path form)."""
    return f"{ENTRYPOINT_MODULE}.{entry_attribute(name, version)}"


def __getattr__(attribute: str) -> Any:
    """``flow_<name>[__v<N>]`` → the compiled flow (PEP 562: asked only for missing names)."""
    if not attribute.startswith("flow_"):
        raise AttributeError(f"module {__name__!r} has no attribute {attribute!r}")
    if attribute not in _flows:
        _flows[attribute] = _build(attribute)
    return _flows[attribute]


def _build(attribute: str) -> Any:
    """The flow of ``attribute``, and the flow-run process made ready to run it.

    Prefect's engine loads the flow *before* it asks the server to move the flow run to Running,
    and a worker that prefetches scheduled runs starts the process before the tick: whatever is
    done here (compiling the definition; the store's schema check, engine and ORM set-up) is done
    while the run waits for its start time, instead of between the tick and the first node.
    All of it runs with the garbage collector paused, and in the flow-run process Prefect starts
    for the run, what exists then is frozen (:mod:`flows.heap`): no collection during the run
    walks Prefect's, the compiler's and the store's start-up objects again.
    """
    with heavy_imports():
        from flows.catalog import Catalog

        catalog = Catalog.load()
        target = _target(attribute, catalog)
        try:
            db.warm_up()
        except Exception:  # noqa: BLE001 - only a head start: the body's own init_db reports a store it cannot use
            pass
        compiled = compile_target(target, catalog)
        return deployment_flow(compiled, attribute, catalog=catalog, version=target.version)


def _target(attribute: str, catalog: Any) -> Target:
    """The definition an attribute names (names are matched through the same mangling)."""
    from compiler.plan import RUNNABLE_KINDS

    pinned = _PINNED.match(attribute)
    base, version = (pinned.group("base"), int(pinned.group("version"))) if pinned else (attribute, None)
    names = [n for n in catalog.ws.named(*RUNNABLE_KINDS) if attribute_name(n) == base]
    if not names:
        raise AttributeError(
            f"no runnable definition in the definitions folder compiles to `{attribute}`: check ERGON_DEFINITIONS "
            "and the worker's working directory (it must see the folder the deployment was made from)"
        )
    return Target(names[0], version)


def compile_target(target: Target, catalog: Any) -> Any:
    """The :class:`flows.catalog.Compiled` a deployment runs: a published version, or the draft.

    A pinned version carries ``version`` (recorded as the run's ``definition_version``); it raises
    :class:`flows.versions.VersionNotFound` when the store has no such version."""
    if target.version is None:
        return catalog.compile(target.name)
    from flows.versions import resolve_for_deployment

    return resolve_for_deployment(target.name, target.version, catalog=catalog)


def deployment_flow(compiled: Any, attribute: str, *, catalog: Any, version: int | None = None) -> Any:
    """The Prefect flow a worker runs for ``compiled`` (see the module docstring)."""
    plan = compiled.plan
    content = compiled.content

    accepted = set(plan.input_schema.get("properties", {}))

    async def _entry(**params: Any) -> Any:
        db.init_db()  # a worker's flow-run process starts with nothing set up (cheap when at head)
        slug = schedule_slug_of_current_run()
        deployment, work_pool = _deployment_of_current_run()
        # a flow run Ergon created for a run it recorded first (flows.prefect.launch): that run
        ergon_run = ergon_run_of_current_flow_run()
        run = run_store.get_run(ergon_run) if ergon_run else None
        if run is not None and run.definition_name == plan.name:
            request = RunRequest(run_id=run.id, trigger=cast(RunTrigger, run.trigger), started_by=run.started_by,
                                 content_hash=definition_store.snapshot_definition(content), catalog=catalog,
                                 inputs_checked=True, deployment=deployment, work_pool=work_pool,
                                 overrides={k: v for k, v in (run.inputs or {}).items() if k not in accepted})
        else:
            request = RunRequest(trigger="schedule" if slug else "api", schedule_slug=slug,
                                 content_hash=definition_store.snapshot_definition(content), catalog=catalog,
                                 run_type="supervised" if SUPERVISED_TAG in (flow_run.tags or []) else None,
                                 deployment=deployment, work_pool=work_pool)
        try:
            return await run_body(plan, params, request)
        finally:  # also when the run suspends (Prefect's Pause unwinds the body)
            if version is not None:
                _record_version(version)

    return as_flow(_entry, plan, attribute)


def _deployment_of_current_run() -> tuple[str | None, str | None]:
    """The deployment ("flow/deployment") and work pool of the flow run this process executes.

    The deployment's name comes from the environment the worker (or runner) gives the flow-run
    process (``PREFECT__DEPLOYMENT_NAME``), not from the API: this runs before the flow body takes
    up its Ergon run, and ``prefect.runtime.deployment`` reads the deployment with a new client,
    which fails at once when the server is away for a moment (a restart) — the flow run then
    failed with its Ergon run left pending for good. The API is asked only when the variable is
    missing."""
    import os

    from prefect.context import FlowRunContext

    context = FlowRunContext.get()
    current = context.flow_run if context is not None else None
    if current is None or current.deployment_id is None:
        return None, None
    name = os.environ.get("PREFECT__DEPLOYMENT_NAME")
    if not name:
        from prefect.runtime import deployment

        name = deployment.name
    return f"{flow_run.flow_name}/{name}", current.work_pool_name


def _record_version(version: int) -> None:
    """The published version the run executed, on its store record."""
    run = run_store.get_run_by_prefect_id(str(flow_run.id)) if flow_run.id else None
    if run is not None and run.definition_version != version:
        run_store.update_run(run.id, definition_version=version)


# --------------------------------------------------------------------------- prefect.yaml entries
def schedule_entries(plan: Any) -> list[dict[str, Any]]:
    """The ``schedules:`` of a deployment from the definition's cron and interval triggers
    (the deployed content's own triggers — a pinned version's — through
    :func:`flows.prefect.schedules.prefect_schedules`, which owns the trigger → schedule rules)."""
    return [_schedule_dict(s) for s in prefect_schedules(plan)]


#: What a prefect.yaml schedule entry may carry (Prefect 3.9's deployment schedule fields).
_SCHEDULE_KEYS = ("cron", "timezone", "interval", "anchor_date", "rrule", "day_or", "active", "parameters", "slug")


def _schedule_dict(schedule: Any) -> dict[str, Any]:
    """A Prefect schedule object (``DeploymentScheduleCreate``) or a ready dict as a
    ``prefect.yaml`` schedule entry."""
    if isinstance(schedule, dict):
        return dict(schedule)
    data = schedule.model_dump(mode="json", exclude_none=True)
    inner = data.pop("schedule", None)
    if isinstance(inner, dict):  # DeploymentScheduleCreate(schedule=CronSchedule(...), active=..., parameters=...)
        data = {**inner, **data}
    if "interval" in data:  # JSON mode writes a timedelta as an ISO duration; prefect.yaml wants seconds
        data["interval"] = schedule.schedule.interval.total_seconds()
    return {k: data[k] for k in _SCHEDULE_KEYS if k in data and (data[k] not in ({}, []) or k == "active")}


#: A flow run carrying this tag runs supervised (a deployment made with ``ergon deploy
#: --supervised`` tags all its runs; a person starting a run in Prefect's UI may add it).
SUPERVISED_TAG = "ergon:supervised"


#: The step that makes a flow run's process work in the project folder.
WORKING_DIRECTORY_STEP = "prefect.deployments.steps.set_working_directory"


def pull_steps(folder: str) -> list[dict[str, Any]]:
    """A deployment's ``pull``: its flow runs work in ``folder`` (an absolute path written at
    deploy time), wherever the worker that starts them was launched from."""
    return [{WORKING_DIRECTORY_STEP: {"directory": folder}}]


def is_ergons_pull(pull: Any) -> bool:
    """Whether ``pull`` is the one step :func:`pull_steps` writes (not steps the user wrote)."""
    return (isinstance(pull, list) and len(pull) == 1 and isinstance(pull[0], dict)
            and list(pull[0]) == [WORKING_DIRECTORY_STEP])


def deployment_entry(compiled: Any, *, version: int | None, work_pool: str, supervised: bool = False,
                     folder: str | None = None) -> dict[str, Any]:
    """The ``prefect.yaml`` deployment of one definition (one deployment per definition); with
    ``folder``, its flow runs work in that folder (:func:`pull_steps`)."""
    plan = compiled.plan
    return {
        "name": plan.name,
        "entrypoint": entrypoint(plan.name, version),
        "description": plan.description or f"Ergon {plan.kind} `{plan.name}`",
        "version": plan.version,
        "tags": ["ergon", plan.kind, *([SUPERVISED_TAG] if supervised else []),
                 f"version:{'latest' if version is None else version}"],
        "work_pool": {"name": work_pool},
        "schedules": schedule_entries(plan),
        "enforce_parameter_schema": True,
        **({"pull": pull_steps(folder)} if folder else {}),
    }


def ensure_work_pool(name: str) -> tuple[bool, str]:
    """Create ``name`` as a ``process`` work pool when it does not exist; (created, the pool's type)."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import WorkPoolCreate
    from prefect.exceptions import ObjectNotFound
    from prefect.workers.process import ProcessWorker

    with get_client(sync_client=True) as client:
        try:
            pool = client.read_work_pool(name)
        except ObjectNotFound:
            client.create_work_pool(WorkPoolCreate(
                name=name, type="process", base_job_template=ProcessWorker.get_default_base_job_template()))
            return True, "process"
    return False, pool.type
