"""Start a run in the background: the dashboard's start form, replays and resumes, webhooks,
chained runs, submission triggers, ``ergon schedules run-now``.

A run started from a long-lived process (Streamlit, the webhook server) must not block it, must
survive it, and must run where Prefect puts it. :func:`start_background` records the run first
(so the caller has its id at once), then:

* when the configured Prefect has a deployment of the definition for the content being started
  (:func:`flows.prefect.launch.deployment_for`), it creates a flow run of that deployment for
  the run: a worker of the deployment's work pool executes it, under the pool's and the
  deployment's concurrency limits, and nothing runs on the host that received the request;
* otherwise it runs ``ergon run NAME --run-id ID`` in its own session with the inputs in a file,
  on this host: the same progress log, pause/resume and crash detection as a run started by
  hand. Its output goes to ``ERGON_HOME/logs/run-<id>.log``.

The :class:`Started` it returns says which way the start went (and the deployment and work
pool), for the CLI, the dashboard and the webhook's answer to say. Replays and resumes of a
deployed definition go through its deployment the same way (:func:`replay`,
:func:`resume_detached`).

Inputs are validated before anything is recorded (:func:`flows.runs.lifecycle.create`), so an
invalid start is refused with the same diagnostics as ``ergon run`` and no run row is left behind.

Who started it travels in the store, not in the child's environment: the caller resolved the
starter (a dashboard sign-in, a trigger's ``as_user``) and the run records it before anything
executes it; ``ergon run NAME --run-id ID`` and a deployment's flow body execute the pending run
and keep its ``started_by``, reading no ``--as``, token or ``ERGON_USER``. A local child's
environment has ``ERGON_USER`` and ``ERGON_TOKEN`` removed, so nothing it does acts as anyone
(and a token of the parent's does not spread to processes that outlive it). A resume started on
someone's behalf (:func:`resume_detached`) names them in the resume log.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from compiler import CompileError, Diagnostic
from flows.catalog import Catalog, DefinitionNotFound
from flows.runs import sources
from flows.runs.lifecycle import ResumeRefused, StartRefused, compile_definition, create, resumable, snapshot_compiled
from flows.settings import logs_dir
from flows.store import runs as run_store
from flows.store.errors import InvalidTransition
from flows.store.models import Run, RunTrigger


@dataclass(frozen=True)
class Started:
    """A run started in the background, and which way it went."""

    run_id: str
    #: "flow/deployment" when a worker of its work pool runs it; None when it runs on this host
    deployment: str | None = None
    work_pool: str | None = None
    flow_run_id: str | None = None
    #: the local process running it (no deployment)
    pid: int | None = None
    #: why a definition that has a deployment started here (its deployment runs other content)
    why_here: str | None = None

    @property
    def where(self) -> str:
        if self.deployment:
            pool = f"work pool {self.work_pool}" if self.work_pool else "served by `ergon serve`, no work pool"
            return f"through deployment {self.deployment} ({pool})"
        return f"as a process on this host (pid {self.pid})" + (f": {self.why_here}" if self.why_here else "")


def start_detached(name: str, inputs: dict[str, Any], **options: Any) -> str:
    """:func:`start_background`, returning only the run id."""
    return start_background(name, inputs, **options).run_id


def start_background(name: str, inputs: dict[str, Any], *, started_by: str, trigger: RunTrigger = "manual",
                     catalog: Catalog | None = None, env: dict[str, str] | None = None,
                     version: int | None = None, supervised: bool = False, message: str | None = None,
                     submission_id: str | Sequence[str] | None = None) -> Started:
    """Validate, record a pending run, and hand it to its deployment or to ``ergon run`` in the
    background (see the module docstring).

    ``env`` adds variables to the environment of the process that runs it (a local child's, or
    the deployment flow run's, through the work pool's ``env`` job variable). ``version`` runs that published version
    instead of the definitions folder's draft. ``supervised``/``message``: as for
    :func:`~flows.runs.lifecycle.create`, like ``submission_id`` (a template's input submission, or a
    list of several merged into a new one).
    Raises :class:`~flows.runs.lifecycle.StartRefused`.
    """
    catalog = catalog or Catalog.load()
    compiled = compile_definition(name, catalog=catalog, version=version)
    route = _deployment(compiled.plan.name, version, compiled.plan.version)
    # the sources recorded with the run: `ergon run NAME --run-id` below compiles against the same definitions
    run = create(compiled, inputs, catalog=catalog, trigger=trigger, started_by=started_by, version=version,
                 supervised=supervised, message=message, submission_id=submission_id)
    if route.deployed is not None:
        return _through_deployment(run, compiled.plan, route.deployed, env=env)
    inputs_file = logs_dir() / f"run-{run.id}.inputs.json"
    inputs_file.write_text(json.dumps(run.inputs), encoding="utf-8")
    child = spawn_ergon(["run", name, "--run-id", run.id, "--input-file", str(inputs_file),
                         *(["--version", str(version)] if version is not None else [])],
                        log_name=f"run-{run.id}.log", env=env)
    run_store.update_run(run.id, pid=child)  # the child owns it now: this process may exit at once
    return Started(run.id, pid=child, why_here=route.why_here)


@dataclass(frozen=True)
class _Route:
    deployed: Any = None  # flows.prefect.launch.Deployed
    why_here: str | None = None


def _deployment(definition: str, version: int | None, content_version: str) -> _Route:
    """The deployment a start of this content goes through, if the configured Prefect has one."""
    from flows.prefect.launch import Deployed, deployment_for
    from flows.prefect.server import ensure_api

    ensure_api()
    found = deployment_for(definition, version, content_version)
    if isinstance(found, Deployed):
        return _Route(deployed=found)
    return _Route(why_here=None if found.reason.endswith("has no deployment") else found.reason)


def _through_deployment(run: Run, plan: Any, deployed: Any, env: dict[str, str] | None = None) -> Started:
    """Create the deployment's flow run for the pending ``run``; the run then belongs to whichever
    worker picks it up (it names no process until then, so crash detection leaves it alone)."""
    from flows.prefect.deployments import SUPERVISED_TAG
    from flows.prefect.launch import start_flow_run

    accepted = set(plan.input_schema.get("properties", {}))
    parameters = {k: v for k, v in (run.inputs or {}).items() if k in accepted and v is not None}
    tags = [f"ergon:trigger:{run.trigger}", *([SUPERVISED_TAG] if run.run_type == "supervised" else [])]
    flow_run_id = start_flow_run(deployed, run_id=run.id, parameters=parameters, tags=tags, env=env)
    run_store.update_run(run.id, prefect_flow_run_id=flow_run_id, deployment=deployed.name,
                         work_pool=deployed.work_pool, pid=None, host=None)
    return Started(run.id, deployment=deployed.name, work_pool=deployed.work_pool, flow_run_id=flow_run_id)


def replay(run: Run, user: str) -> Started:
    """A new run of ``run``'s definition with its inputs. A run of a published version replays
    that version; a run of the draft replays the draft as it is now. Raises
    :class:`~flows.runs.lifecycle.StartRefused` with the problems (the draft may have changed)."""
    try:
        catalog = sources.catalog_for_run(run)  # the definitions (and tools) the run came from
    except DefinitionNotFound as exc:
        raise StartRefused([Diagnostic("invalid-input", exc.args[0], run.definition_name, 1, 1)]) from exc
    return start_background(run.definition_name, dict(run.inputs or {}), started_by=user, trigger="replay",
                            version=run.definition_version, catalog=catalog, supervised=run.run_type == "supervised")


def resume_detached(run: Run, user: str) -> Started:
    """Continue a failed or crashed run from its checkpoint in the background: through its
    definition's deployment when it has one for the run's content (a new flow run of it, named
    after the run), else ``ergon runs resume`` on this host (output in
    ``ERGON_HOME/logs/run-<id>.resume.log``). Raises :class:`~flows.runs.lifecycle.ResumeRefused`."""
    resumable(run)
    try:
        compiled = snapshot_compiled(run, sources.catalog_for_run(run))
    except (DefinitionNotFound, CompileError):
        compiled = None  # `ergon runs resume` says what is wrong with it
    route = _deployment(run.definition_name, run.definition_version, compiled.plan.version) if compiled else _Route()
    if compiled is not None and route.deployed is not None:
        try:  # claimed once (as `ergon runs resume` claims it); no process owns it until a worker does
            run_store.set_run_status(run.id, "pending", expect=("failed", "crashed"))
        except InvalidTransition as exc:
            raise ResumeRefused(f"run {run.id} is being resumed already ({exc})") from None
        claimed = run_store.require_run(run.id)
        return _through_deployment(claimed, compiled.plan, route.deployed)
    pid = spawn_ergon(["runs", "resume", run.id], log_name=f"run-{run.id}.resume.log",
                      header=f"resume of run {run.id} asked by {user}")
    return Started(run.id, pid=pid, why_here=route.why_here)


#: Identity variables a detached child never inherits (see the module docstring).
_IDENTITY_ENV = ("ERGON_USER", "ERGON_TOKEN")


def spawn_ergon(args: list[str], *, log_name: str, env: dict[str, str] | None = None, header: str | None = None) -> int:
    """Run ``ergon ARGS`` in the background, in its own session, acting as nobody (the run it is
    given names its starter); its output goes to ``ERGON_HOME/logs/<log_name>``, after
    ``header`` when given. Returns the child's pid."""
    child_env = {k: v for k, v in {**os.environ, **(env or {})}.items() if k not in _IDENTITY_ENV}
    with open(logs_dir() / log_name, "ab") as log:
        if header:
            log.write(f"{header}\n".encode())
            log.flush()
        return subprocess.Popen(
            [sys.executable, "-m", "flows.cli", *args],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=child_env,
            start_new_session=True,  # outlives the caller (a Streamlit rerun, a stopped server)
        ).pid
