"""The Prefect settings Ergon runs with, applied before ``prefect`` is first imported.

Prefect's configuration is the user's: the environment, ``.env``, ``prefect.toml``,
``pyproject.toml`` and the active profile decide which API Ergon talks to and how its client
behaves (:mod:`flows.prefect.user_settings` reads where each setting comes from). Ergon adds
defaults only for what the user left unset, in three groups:

* :data:`CLIENT_DEFAULTS` — settings of Prefect's client, runner and worker that Ergon's
  processes need (a SQLite-backed server answers 503 while its database is locked, so a busy
  machine must retry more; deployment runs picked up in 2 s rather than 10; Prefect's internal
  services quiet on the console). Applied to the environment of Ergon's processes only when no
  source of Prefect's sets them.
* :data:`CONSOLE_DEFAULTS` — Prefect's console handler, which only the environment configures
  (Prefect's logging settings file reads ``PREFECT_LOGGING_*`` variables): ``ergon run`` prints
  its own progress, and Prefect's console copies (with tracebacks of failed nodes) would repeat
  it. Logs still reach the Prefect API and its UI at every level.
* :data:`SERVER_DEFAULTS` — settings of Ergon's own local server, given to that server's
  process only (:mod:`flows.prefect.server`): analytics off (no telemetry errors, no start-up
  lock), quiet server logs, the UI on.

No ephemeral server in Ergon's processes (:data:`CLIENT_DEFAULTS`): it loses task-run records
on exit (see the Prefect notes); Ergon resolves an API before it uses Prefect
(:func:`flows.prefect.server.ensure_api_url`), so a process that reaches Prefect without one
is a defect, and fails loudly instead of starting a private server.

:func:`configure_prefect_env` runs when the :mod:`flows.prefect` package is imported, before any
of its modules imports prefect. This module itself imports nothing of Prefect.
"""

from __future__ import annotations

import os

from flows.prefect.user_settings import Setting, set_by_user

#: Prefect settings Ergon's processes need, applied when no Prefect source sets them.
CLIENT_DEFAULTS: dict[Setting, str] = {
    Setting("PREFECT_CLIENT_RETRY_EXTRA_CODES", ("client", "retry_extra_codes")): "503",
    Setting("PREFECT_CLIENT_MAX_RETRIES", ("client", "max_retries")): "10",
    Setting("PREFECT_RUNNER_POLL_FREQUENCY", ("runner", "poll_frequency")): "2",
    Setting("PREFECT_WORKER_QUERY_SECONDS", ("worker", "query_seconds")): "2",
    Setting("PREFECT_SERVER_EPHEMERAL_ENABLED", ("server", "ephemeral", "enabled")): "false",
    # Prefect's background services report a failure to send as a bare stderr line ("Service
    # 'EventsWorker' failed with 1 pending items."); Ergon's commands say what failed themselves.
    Setting("PREFECT_INTERNAL_LOGGING_LEVEL", ("internal", "logging_level")): "CRITICAL",
}

#: Prefect logging overrides that only the environment sets; applied unless it does.
CONSOLE_DEFAULTS: dict[str, str] = {
    "PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL": "CRITICAL",
}

#: The environment of Ergon's own local Prefect server (unless the user's environment says otherwise).
SERVER_DEFAULTS: dict[str, str] = {
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "PREFECT_SERVER_LOGGING_LEVEL": "CRITICAL",
    "PREFECT_UI_ENABLED": "true",
    "PREFECT_SERVER_EPHEMERAL_ENABLED": "false",
}

#: Task-run options every node visit gets unless its retry policy says otherwise.
TASK_DEFAULTS: dict[str, object] = {
    "persist_result": False,
    "log_prints": False,
}


def configure_prefect_env() -> None:
    """Apply Ergon's defaults for what the user's Prefect configuration leaves unset (before
    ``import prefect``). Creates nothing, changes no file."""
    for setting, value in CLIENT_DEFAULTS.items():
        if setting.env not in os.environ and not set_by_user(setting):
            os.environ[setting.env] = value
    for key, value in CONSOLE_DEFAULTS.items():
        os.environ.setdefault(key, value)
