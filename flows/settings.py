"""Where Ergon keeps its state, and the Prefect settings it runs with — in one place.

Everything local lives under ``ERGON_HOME`` (default ``.ergon/`` in the current folder): the
SQLite store, the local Prefect server's home, the document store, logs. ``ERGON_DATABASE_URL``
points the store elsewhere; ``PREFECT_API_URL`` points at an existing Prefect server.

:func:`configure_prefect_env` must run before ``prefect`` is first imported: Prefect reads its
settings from the environment at import. The values are the ones measured to give quiet, lossless
runs (see the Prefect notes): analytics off (no telemetry errors, no startup lock), console logs
at WARNING (INFO still reaches the API), no ephemeral server (it loses task-run records on exit).
"""

from __future__ import annotations

import os
from pathlib import Path

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

#: How long a human-task pause polls for an answer (seconds). The probe measured ~0.1 s latency at 1.
PAUSE_POLL_SECONDS = 1
#: Runs whose heartbeat is older than this (and whose process is gone) are marked crashed.
HEARTBEAT_TIMEOUT_SECONDS = 300


def ergon_home() -> Path:
    """The state folder (created on first use)."""
    home = Path(os.environ.get("ERGON_HOME") or ".ergon").expanduser().resolve()
    home.mkdir(parents=True, exist_ok=True)
    return home


def prefect_home() -> Path:
    path = ergon_home() / "prefect"
    path.mkdir(parents=True, exist_ok=True)
    return path


def documents_dir() -> Path:
    path = ergon_home() / "documents"
    path.mkdir(parents=True, exist_ok=True)
    return path


def logs_dir() -> Path:
    path = ergon_home() / "logs"
    path.mkdir(parents=True, exist_ok=True)
    return path


def definitions_dir() -> Path:
    return Path(os.environ.get("ERGON_DEFINITIONS", "definitions"))


def configure_prefect_env() -> None:
    """Apply Ergon's Prefect defaults to the environment (before ``import prefect``)."""
    os.environ.setdefault("PREFECT_HOME", str(prefect_home()))
    for key, value in PREFECT_DEFAULTS.items():
        os.environ.setdefault(key, value)
