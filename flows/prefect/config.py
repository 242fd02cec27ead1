"""The Prefect settings Ergon runs with, applied before ``prefect`` is first imported.

Prefect reads its settings from the environment at import, so :func:`configure_prefect_env` runs
when the :mod:`flows.prefect` package is imported, before any of its modules imports prefect.
This module itself imports nothing of Prefect. The values are the ones measured to give quiet,
lossless runs (see the Prefect notes): analytics off (no telemetry errors, no startup lock),
console logs off (INFO still reaches the API), no ephemeral server (it loses task-run records on
exit).
"""

from __future__ import annotations

import os

from flows.settings import ergon_home_path

#: Prefect settings Ergon applies unless the user set them. Keep every Prefect default here.
PREFECT_DEFAULTS: dict[str, str] = {
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    # Ergon prints its own progress and errors; Prefect's console copies (with tracebacks of
    # failed nodes) would repeat them. Logs still reach the Prefect API and its UI.
    "PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL": "CRITICAL",
    "PREFECT_SERVER_LOGGING_LEVEL": "CRITICAL",
    "PREFECT_SERVER_EPHEMERAL_ENABLED": "false",
    "PREFECT_UI_ENABLED": "true",
    "PREFECT_LOGGING_LOG_PRINTS": "false",
    "PREFECT_TASKS_REFRESH_CACHE": "false",
    # Ergon checkpoints every visit in its own store; Prefect result persistence is not needed.
    "PREFECT_RESULTS_PERSIST_BY_DEFAULT": "false",
    # Deployment runs: pick up scheduled and resumed runs quickly.
    "PREFECT_RUNNER_POLL_FREQUENCY": "2",
    "PREFECT_WORKER_QUERY_SECONDS": "2",
    # A SQLite-backed Prefect server answers 503 when its database is locked (many runs at once):
    # retry more than the default 5 times before a run gives up.
    "PREFECT_CLIENT_RETRY_EXTRA_CODES": "503",
    "PREFECT_CLIENT_MAX_RETRIES": "10",
}

#: Task-run options every node visit gets unless its retry policy says otherwise.
TASK_DEFAULTS: dict[str, object] = {
    "persist_result": False,
    "log_prints": False,
}


def configure_prefect_env() -> None:
    """Apply Ergon's Prefect defaults to the environment (before ``import prefect``).

    Creates nothing: importing the package must not leave a state folder behind in a folder where
    only ``ergon check`` ran (Prefect makes its home when it first writes there)."""
    os.environ.setdefault("PREFECT_HOME", str(ergon_home_path() / "prefect"))
    for key, value in PREFECT_DEFAULTS.items():
        os.environ.setdefault(key, value)
