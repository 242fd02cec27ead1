"""A run's life, owned in one place: record it, start it here or in the background, resume, replay.

Callers — the CLI, the dashboard, triggers, benchmarks — say *what* they want; this module does
it the same way for all of them:

* :func:`compile_definition` — the definition (a name, a path, a published version) as a
  :class:`~flows.catalog.Compiled`, or a :class:`StartRefused` with its diagnostics.
* :func:`create` — validate the inputs once (:func:`flows.execution.inputs.validate_inputs`), pin the
  content as the run's snapshot, record a ``pending`` run.
* :func:`start` — create (unless the run was recorded already) and execute in this process on
  Prefect (:func:`flows.prefect.build.run_in_process`), blocking, through human tasks too.
* :func:`resume` — continue a failed or crashed run from its checkpoint, on the content it pinned.
* :func:`prepare` — what every process that executes runs needs first: the Prefect API, the store
  at head, and runs left ``running`` by a dead process marked ``crashed``.

:func:`flows.runs.detached.start_detached` starts a run in the background (it creates the run here
and runs ``ergon run --run-id`` for it); :func:`flows.runs.cancel.cancel` cancels one. While a run
executes, its status is written only by the recorder this module's flow body hands the engine
(:mod:`flows.execution.recorder`); the statuses written here are the ones before it starts and after
its process gave up (interrupted, refused by Prefect before the body ran).
"""

from __future__ import annotations

import asyncio

import logging
import os
import socket

from collections.abc import Sequence
from typing import Any, cast

from compiler import CompileError, Diagnostic
from flows.catalog import Catalog, Compiled, DefinitionNotFound
from flows.errors import DefinitionError, ErgonError, RunError
from flows.heap import heavy_imports
from flows.identity import own_name
from flows.execution.inputs import validate_inputs
from flows.execution.request import RunRequest
from flows.runtime.effects import Listener, RunResult, no_listener
from flows.runtime.errors import ErrorKind
from flows.store import definitions as definition_store
from flows.store import runs as run_store
from flows.store.errors import InvalidTransition, NotFound
from flows.store.models import RUN_ENDED, Run, RunTrigger

log = logging.getLogger("ergon.runs")


class StartRefused(RunError, ValueError):
    """The definition does not compile or the inputs do not fit its context schema; ``problems``
    are the diagnostics (nothing was recorded)."""

    def __init__(self, problems: list[Diagnostic]) -> None:
        super().__init__("; ".join(p.message for p in problems))
        self.problems = problems


class ResumeRefused(RunError):
    """The run is not in a state that resumes (only failed or crashed runs do)."""


def detect_crashed() -> list[Run]:
    """Mark runs of dead processes crashed and release their tasks (:func:`run_stopped`); returns
    them. Their Prefect flow runs are marked ``Crashed`` too when a Prefect API is known or a
    local server is up — never by starting one (``ergon runs list`` calls this; the store alone
    decides who may answer). Runs that ended in the store but whose process died before it told
    Prefect (:func:`flows.store.runs.ended_unsettled`) give their open flow runs the store's end.

    A run handed to its deployment names no process until a flow body takes it up; when Prefect
    says its flow run ended before that, or has been running (or starting) for longer than
    :data:`~flows.settings.TAKE_UP_TIMEOUT_SECONDS` without taking it up — its worker or process
    died meanwhile — it is crashed too (:func:`flows.prefect.launch.lost_runs`), so it resumes."""
    from flows.prefect.server import configured, ensure_api_url, healthy, status
    from flows.runs.answers import run_stopped, tell_prefect_stopped
    from flows.settings import HEARTBEAT_TIMEOUT_SECONDS

    crashed = list(run_store.mark_stale_runs_crashed(heartbeat_timeout=HEARTBEAT_TIMEOUT_SECONDS))
    unsettled = run_store.ended_unsettled(heartbeat_timeout=HEARTBEAT_TIMEOUT_SECONDS)
    queued = run_store.queued_on_deployments()
    api = configured() if crashed or unsettled or queued else None
    # the user's API is always there to tell; Ergon's local server only when it is up (never started for this)
    reach_prefect = bool(crashed or unsettled or queued) and (
        (api is not None and (not api.managed or healthy(api.url))) or status() is not None)
    if reach_prefect:
        ensure_api_url()
    if reach_prefect and queued:
        crashed += _lost_before_take_up(queued)
    # the store's part run by run, Prefect's for all of them at once
    stopped = [(run, run_stopped(run, prefect=False)) for run in crashed]
    if reach_prefect:
        tell_prefect_stopped(stopped)
        _settle(unsettled)
    return crashed


def _lost_before_take_up(queued: list[Run]) -> list[Run]:
    """The runs handed to a deployment whose flow run will never take them up, marked crashed."""
    from flows.prefect.launch import lost_runs
    from flows.settings import TAKE_UP_TIMEOUT_SECONDS

    try:
        lost = lost_runs({run.id: run.prefect_flow_run_id for run in queued if run.prefect_flow_run_id},
                         take_up_seconds=TAKE_UP_TIMEOUT_SECONDS)
    except Exception as exc:  # noqa: BLE001 - asked again next time; Prefect's view is secondary
        log.warning("could not ask Prefect about runs waiting for a worker: %s", exc,
                    exc_info=not isinstance(exc, ErgonError))
        return []
    return [row for run_id, reason in lost.items() if (row := run_store.mark_lost(run_id, reason)) is not None]


def _settle(runs: list[Run]) -> None:
    """Give the flow runs of runs that ended in the store, and whose process died before Prefect
    heard, the store's end (:mod:`flows.prefect.leftovers`); best effort, like crash marking."""
    from flows.prefect.leftovers import end_flow_runs

    for run in runs:
        try:
            # the flow run that ended it (earlier ones of a resumed run were marked crashed then)
            flow_runs = [run.prefect_flow_run_id] if run.prefect_flow_run_id else []
            end_flow_runs(flow_runs, run.status,
                          f"Ergon: the run {run.status}; its process {run.pid} stopped before telling Prefect")
            run_store.release_ended(run_id=run.id)
        except Exception:  # noqa: BLE001 - Prefect's view is secondary: tried again next time
            log.warning("could not settle the Prefect flow runs of run %s", run.id, exc_info=True)


def prepare() -> list[Run]:
    """Point at the Prefect API, bring the store to head, mark runs of dead processes crashed
    (running ones, paused ones a process blocked in, pending ones whose owner died); returns the
    runs just marked crashed (the CLI says so)."""
    from flows.prefect.server import ensure_api_url
    from flows.store import db

    ensure_api_url()
    db.init_db()
    return detect_crashed()


def compile_definition(name: str, *, catalog: Catalog | None = None, version: int | None = None) -> Compiled:
    """The definition ``name`` (or the file at that path), or its published ``version``.

    Raises :class:`StartRefused` with the diagnostics when it does not compile, and with one
    diagnostic naming it when there is no such definition or version."""
    from flows.versions import compiled_version

    catalog = catalog or Catalog.load(name)
    try:
        return catalog.compile(name) if version is None else compiled_version(name, version, catalog)
    except CompileError as exc:
        raise StartRefused(list(exc.diagnostics)) from exc
    except (DefinitionNotFound, DefinitionError) as exc:
        message = str(exc.args[0] if exc.args else exc)
        raise StartRefused([Diagnostic("invalid-input", message, name, 1, 1)]) from exc


def create(compiled: Compiled, inputs: dict[str, Any], *, catalog: Catalog | None = None,
           trigger: RunTrigger = "manual", started_by: str | None = None, version: int | None = None,
           source: str = "inputs", supervised: bool = False, message: str | None = None,
           submission_id: str | Sequence[str] | None = None) -> Run:
    """Validate ``inputs`` against the definition and record a pending run of it, with the folders
    ``catalog`` was loaded from (what resume and replay rebuild it from, :mod:`flows.runs.sources`).

    ``supervised`` (or the definition's ``run_type: supervised``) gives the run a supervisor;
    ``message`` is posted to it for its first turn (the seed's ``config.user_message``).

    Raises :class:`StartRefused` (nothing recorded) when the inputs do not fit; ``source`` names
    where they came from in the diagnostics (``--input``, a file, ``inputs``). ``started_by`` is
    the identity the caller resolved (the CLI's :mod:`flows.identity`, the dashboard's sign-in, a
    trigger's ``as_user``); without one, the OS user acting as themselves
    (:func:`flows.identity.own_name`) — never a name from the environment.

    A template run reads a submission: ``submission_id``'s selected values are its ``input``; given
    a list of several ids, a submission merged from them is recorded with the run and read
    instead; one started with raw inputs records them as its input submission first
    (:mod:`flows.submissions.template_runs`)."""
    from flows.submissions import template_runs

    plan = compiled.plan
    try:
        given = template_runs.given_input(plan, inputs, submission_id)
    except template_runs.NotATemplateInput as exc:
        raise StartRefused([Diagnostic("invalid-input", p, plan.name, 1, 1) for p in exc.problems]) from exc
    except NotFound as exc:
        raise StartRefused([Diagnostic("invalid-input", str(exc), plan.name, 1, 1)]) from exc
    if given is not None:
        inputs = {**inputs, "input": given.data}
    run_type = "supervised" if supervised or plan.run_type == "supervised" else "programmatic"
    if run_type == "supervised" and plan.control != "state_machine":
        raise StartRefused([Diagnostic("invalid-input", f"`{plan.name}` is a {plan.kind}: only processes run "
                                       "supervised (a supervisor steers a state machine's steps): start it without --supervised",
                                       plan.name, 1, 1)])
    if message is not None and run_type != "supervised":
        raise StartRefused([Diagnostic("invalid-input", "a message goes to a run's supervisor: start the run "
                                       "supervised (--supervised) to send one", plan.name, 1, 1)])
    problems = validate_inputs(plan, inputs, source=source)
    if problems:
        raise StartRefused(problems)
    content_hash = definition_store.snapshot_definition(compiled.content)
    if version is None:
        from flows.versions import version_of_content

        version = version_of_content(compiled.plan.name, content_hash)
    started_by = started_by or own_name()
    input_submission = (given.record(plan, created_by=started_by) if given is not None
                        else template_runs.record_input(plan, inputs, created_by=started_by))
    # this process owns the run until one starts it (start_detached hands it to its child)
    run = run_store.create_run(compiled.plan.name, content_hash=content_hash, inputs=inputs, trigger=trigger,
                               started_by=started_by, definition_version=version,
                               input_submission_id=input_submission,
                               catalog_sources=catalog.sources if catalog is not None else None,
                               pid=os.getpid(), host=socket.gethostname(), run_type=run_type)
    if message:
        from flows.runs.supervision import post_message

        post_message(run, message, actor=run.started_by)
    return run


def start(compiled: Compiled, inputs: dict[str, Any], *, catalog: Catalog, run_id: str | None = None,
          trigger: RunTrigger = "manual", started_by: str | None = None, listener: Listener = no_listener,
          record: str | None = None, replay: str | None = None, version: int | None = None,
          source: str = "inputs", supervised: bool = False, message: str | None = None,
          submission_id: str | Sequence[str] | None = None) -> RunResult:
    """Execute a run of ``compiled`` in this process, blocking until it ends (or its process must stop).

    Without ``run_id`` the run is created first (inputs validated); with it, the pending (or
    resuming) run recorded earlier is executed. ``record``/``replay`` name a model-response
    cassette: every model response is stored in it, or every model call answered from it (a miss
    fails the node loudly). ``version`` is the published version being run.
    """
    with heavy_imports():  # Prefect and the engine; in `ergon run`'s process frozen afterwards (flows.heap)
        from flows.llm.cassettes import use_cassette
        from flows.prefect.build import run_in_process
        from flows.runs.answers import run_ended

    if run_id is None:
        run = create(compiled, inputs, catalog=catalog, trigger=trigger, started_by=started_by, version=version,
                     source=source, supervised=supervised, message=message, submission_id=submission_id)
        inputs = run.inputs  # a submission's values, when it was given one
    else:
        run = run_store.require_run(run_id)
        if version is not None and run.definition_version != version:
            run_store.update_run(run_id, definition_version=version)
    plan = compiled.plan
    accepted = set(plan.input_schema.get("properties", {}))
    request = RunRequest(run_id=run.id, trigger=cast(RunTrigger, run.trigger), started_by=run.started_by,
                         content_hash=run.content_hash, listener=listener, catalog=catalog, inputs_checked=True,
                         overrides={k: v for k, v in inputs.items() if k not in accepted})
    state = None
    try:
        with use_cassette(record=record, replay=replay):
            state = run_in_process(plan, {k: v for k, v in inputs.items() if k in accepted}, request)
    except KeyboardInterrupt:  # a person stopped it: a cancel (a stop from outside is a crash, see execution)
        if run_store.run_status(run.id) not in RUN_ENDED:
            run_store.set_run_status(run.id, "cancelled", error="interrupted (Ctrl-C)")
            run_ended(run.id, "cancelled", "interrupted (Ctrl-C)")
    except (asyncio.CancelledError, Exception):
        # The run's body recorded it crashed (its Prefect API was lost, flows.prefect.watchdog) and
        # Prefect's engine then failed to report the end to that API: the record says it all.
        if run_store.run_status(run.id) != "crashed":
            raise
    ended = run_store.require_run(run.id)
    if ended.status == "pending":  # Prefect refused the call before the flow body ran
        message = getattr(state, "message", None) or "the flow did not start"
        ended = run_store.set_run_status(run.id, "failed", error=message, error_kind="internal")
        run_ended(run.id, "failed", message)
    return RunResult(ended.id, ended.status, ended.outcome, dict(ended.context or {}), ended.error,
                     cast(ErrorKind | None, ended.error_kind))


def snapshot_compiled(run: Run, catalog: Catalog) -> Compiled:
    """The Plan of the exact content a run started with (its pinned snapshot)."""
    content = definition_store.get_snapshot(run.content_hash) if run.content_hash else None
    if content is None:
        return catalog.compile(run.definition_name)
    return catalog.compile_content(run.definition_name, content, label=".snapshot")


def resumable(run: Run) -> None:
    """Raise :class:`ResumeRefused` unless ``run`` may resume."""
    if run.status not in ("failed", "crashed"):
        waiting = f": it goes on when its task is answered (`ergon tasks list --run {run.id}`)" if run.status == "paused" else ""
        raise ResumeRefused(f"run {run.id} is {run.status}; only failed or crashed runs resume{waiting}")


def resume(run_id: str, *, catalog: Catalog | None = None, listener: Listener = no_listener,
           record: str | None = None, replay: str | None = None) -> RunResult:
    """Continue a failed or crashed run after its last completed visit (in this process, blocking)."""
    from flows.runs.sources import catalog_for_run

    run = run_store.require_run(run_id)
    resumable(run)
    catalog = catalog or catalog_for_run(run)  # the folders (and file) it started from, tools included
    compiled = snapshot_compiled(run, catalog)
    try:  # claimed once: two resumes at the same time (two answers to one stopped run) run it once;
        # this process owns it from the claim on (crash detection must not find the dead one it replaces)
        run_store.set_run_status(run_id, "pending", expect=("failed", "crashed"), pid=os.getpid(),
                                 host=socket.gethostname())
    except InvalidTransition as exc:
        raise ResumeRefused(f"run {run_id} is being resumed already ({exc})") from None
    return start(compiled, dict(run.inputs or {}), catalog=catalog, run_id=run_id, listener=listener,
                 record=record, replay=replay)
