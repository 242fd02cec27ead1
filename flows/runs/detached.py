"""Start a run in the background: the dashboard's start form, replays, webhooks, chained runs.

A run started from a long-lived process (Streamlit, the webhook server) must not block it, and
must survive it: :func:`start_detached` records the run first (so the caller has its id at once),
then runs ``ergon run NAME --run-id ID`` in its own session with the inputs in a file. The child
process is an ordinary ``ergon run``: the same progress log, pause/resume and crash detection as
a run started by hand. Its output goes to ``ERGON_HOME/logs/run-<id>.log``.

Inputs are validated before anything is recorded (:func:`flows.runs.lifecycle.create`), so an
invalid start is refused with the same diagnostics as ``ergon run`` and no run row is left behind.

Who started it travels in the store, not in the child's environment: the caller resolved the
starter (a dashboard sign-in, a trigger's ``as_user``) and :func:`start_detached` records it on
the pending run before the child exists; ``ergon run NAME --run-id ID`` executes only a pending
run and keeps its ``started_by``, reading no ``--as``, token or ``ERGON_USER``. The child's
environment has ``ERGON_USER`` and ``ERGON_TOKEN`` removed, so nothing it does acts as anyone
(and a token of the parent's does not spread to processes that outlive it). A resume started on
someone's behalf (:func:`resume_detached`) names them in the resume log.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

from compiler import Diagnostic
from flows.catalog import Catalog, DefinitionNotFound
from flows.runs import sources
from flows.runs.lifecycle import StartRefused, compile_definition, create, resumable
from flows.settings import logs_dir
from flows.store import runs as run_store
from flows.store.models import Run, RunTrigger


def start_detached(name: str, inputs: dict[str, Any], *, started_by: str, trigger: RunTrigger = "manual",
                   catalog: Catalog | None = None, env: dict[str, str] | None = None,
                   version: int | None = None, supervised: bool = False, message: str | None = None,
                   submission_id: str | None = None) -> str:
    """Validate, record a pending run, start ``ergon run`` for it in the background; return the run id.

    ``env`` adds variables to the child's environment. ``version`` runs that published version
    instead of the definitions folder's draft. ``supervised``/``message``: as for
    :func:`~flows.runs.lifecycle.create`, like ``submission_id`` (a template's input submission). Raises :class:`~flows.runs.lifecycle.StartRefused`.
    """
    catalog = catalog or Catalog.load()
    compiled = compile_definition(name, catalog=catalog, version=version)
    # the sources recorded with the run: `ergon run NAME --run-id` below compiles against the same definitions
    run = create(compiled, inputs, catalog=catalog, trigger=trigger, started_by=started_by, version=version,
                 supervised=supervised, message=message, submission_id=submission_id)
    inputs_file = logs_dir() / f"run-{run.id}.inputs.json"
    inputs_file.write_text(json.dumps(run.inputs), encoding="utf-8")
    child = spawn_ergon(["run", name, "--run-id", run.id, "--input-file", str(inputs_file),
                         *(["--version", str(version)] if version is not None else [])],
                        log_name=f"run-{run.id}.log", env=env)
    run_store.update_run(run.id, pid=child)  # the child owns it now: this process may exit at once
    return run.id


def replay(run: Run, user: str) -> str:
    """A new run of ``run``'s definition with its inputs; the new run id. A run of a published
    version replays that version; a run of the draft replays the draft as it is now. Raises
    :class:`~flows.runs.lifecycle.StartRefused` with the problems (the draft may have changed)."""
    try:
        catalog = sources.catalog_for_run(run)  # the definitions (and tools) the run came from
    except DefinitionNotFound as exc:
        raise StartRefused([Diagnostic("invalid-input", exc.args[0], run.definition_name, 1, 1)]) from exc
    return start_detached(run.definition_name, dict(run.inputs or {}), started_by=user, trigger="replay",
                          version=run.definition_version, catalog=catalog, supervised=run.run_type == "supervised")


def resume_detached(run: Run, user: str) -> None:
    """Run ``ergon runs resume`` for a failed or crashed run in the background (its output goes to
    ``ERGON_HOME/logs/run-<id>.resume.log``); raises :class:`~flows.runs.lifecycle.ResumeRefused`."""
    resumable(run)
    spawn_ergon(["runs", "resume", run.id], log_name=f"run-{run.id}.resume.log",
                header=f"resume of run {run.id} asked by {user}")


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
