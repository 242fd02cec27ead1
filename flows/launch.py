"""Start a run in the background: the dashboard's start form, replays, webhooks, chained runs.

A run started from a long-lived process (Streamlit, the webhook server) must not block it, and
must survive it: :func:`start_detached` records the run first (so the caller has its id at once),
then runs ``ergon run NAME --run-id ID`` in its own session with the inputs in a file. The child
process is an ordinary ``ergon run``: the same validation, progress log, pause/resume and crash
detection as a run started by hand. Its output goes to ``ERGON_HOME/logs/run-<id>.log``.

Inputs are validated here against the definition before anything is recorded, so an invalid
start is refused with the same diagnostics as ``ergon run`` and no run row is left behind.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

from compiler import Diagnostic


class StartRefused(ValueError):
    """The definition does not compile or the inputs do not fit its context schema."""

    def __init__(self, problems: list[Diagnostic]) -> None:
        super().__init__("; ".join(p.message for p in problems))
        self.problems = problems


def start_detached(name: str, inputs: dict[str, Any], *, started_by: str, trigger: str = "manual",
                   catalog: Any = None, env: dict[str, str] | None = None, version: int | None = None) -> str:
    """Validate, record a pending run, start ``ergon run`` for it in the background; return the run id.

    ``trigger`` is one of the store's run triggers (``manual``, ``replay``, ``webhook``,
    ``on_complete``, ``schedule``…). ``env`` adds variables to the child's environment.
    ``version`` runs that published version instead of the definitions folder's draft.
    """
    from compiler import CompileError
    from flows.catalog import Catalog
    from flows.cli.inputs import validate_inputs
    from flows.settings import logs_dir
    from flows.store import repo

    catalog = catalog or Catalog.load()
    try:
        if version is None:
            compiled = catalog.compile(name)
        else:
            from flows.versions import compiled_version

            compiled = compiled_version(name, version, catalog)
    except CompileError as exc:
        raise StartRefused(list(exc.diagnostics)) from exc
    except LookupError as exc:  # no such definition or published version
        raise StartRefused([Diagnostic("invalid-input", str(exc.args[0] if exc.args else exc), name, 1, 1)]) from exc
    problems = validate_inputs(compiled.plan, inputs, source="inputs")
    if problems:
        raise StartRefused(problems)
    run = repo.create_run(compiled.plan.name, content=compiled.content, inputs=inputs, trigger=trigger,
                          started_by=started_by, definition_version=version)
    inputs_file = logs_dir() / f"run-{run.id}.inputs.json"
    inputs_file.write_text(json.dumps(inputs), encoding="utf-8")
    spawn_ergon(["run", name, "--run-id", run.id, "--input-file", str(inputs_file),
                 *(["--version", str(version)] if version is not None else [])],
                log_name=f"run-{run.id}.log", user=started_by, env=env)
    return run.id


def spawn_ergon(args: list[str], *, log_name: str, user: str, env: dict[str, str] | None = None) -> None:
    """Run ``ergon ARGS`` in the background, in its own session, acting as ``user``; its output
    goes to ``ERGON_HOME/logs/<log_name>``."""
    from flows.settings import logs_dir

    child_env = {**os.environ, **(env or {}), "ERGON_USER": user}
    with open(logs_dir() / log_name, "ab") as log:
        subprocess.Popen(
            [sys.executable, "-m", "flows.cli", *args],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=child_env,
            start_new_session=True,  # outlives the caller (a Streamlit rerun, a stopped server)
        )
