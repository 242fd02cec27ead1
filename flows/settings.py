"""Where Ergon keeps its state, and the Prefect settings it runs with — in one place.

Everything local lives under ``ERGON_HOME`` (default ``.ergon/`` in the project folder): the
SQLite store, the home of Ergon's local Prefect server, the document store, logs. The project
folder is the current folder or, as git and dbt find theirs, the nearest one above it holding a
project marker (:data:`PROJECT_MARKERS`, :func:`project_root`): the ``ergon`` command moves
there before it runs a command, so a command run from a subfolder uses the project's store,
definitions and Prefect configuration instead of starting new ones.
``ERGON_DATABASE_URL`` points the store elsewhere. Which Prefect API Ergon talks to is Prefect's
own configuration (:mod:`flows.prefect.server`); the defaults Ergon adds to it are
:mod:`flows.prefect.config`'s.
"""

from __future__ import annotations

import os
from pathlib import Path

#: How often a waiting run looks in the store for a cancel or an operator's advance (seconds).
PAUSE_POLL_SECONDS = 1
#: How often a run paused in-process asks Prefect whether it was resumed with an answer (seconds):
#: the answer-to-next-node latency is up to this plus the resume itself (~0.1 s). One light GET
#: of the flow run each time; a run suspended under a deployment makes none.
ANSWER_POLL_SECONDS = 0.25
#: How often a running run's process asks its Prefect API's health check (one GET, no retries).
API_CHECK_SECONDS = 5
#: A run whose Prefect API has not answered for this long stops waiting for it: the run is
#: recorded crashed (it resumes from its checkpoint) and its process exits. A server back within
#: this time is taken up again and the run goes on (:mod:`flows.prefect.watchdog`).
#: ``ERGON_API_LOST_SECONDS`` changes it (:func:`api_lost_seconds`).
DEFAULT_API_LOST_SECONDS = 60
#: Runs whose heartbeat is older than this (and whose process is gone) are marked crashed.
HEARTBEAT_TIMEOUT_SECONDS = 300
#: A run handed to its deployment whose flow run Prefect shows starting or running this long
#: without a flow body having taken the run up is lost (its worker or process died): crashed.
#: A flow body takes its run up within seconds of its process loading the flow.
TAKE_UP_TIMEOUT_SECONDS = 60
#: How deep sub-process runs may nest. `ergon check` refuses call cycles; this catches what it
#: cannot see (a pinned older version that calls back), before the interpreter's own limit.
DEFAULT_MAX_SUBPROCESS_DEPTH = 20


#: What makes a folder an Ergon project's root: its definitions, its Prefect project file, or an
#: ``ergon.toml`` (which may be empty: a root whose definitions live elsewhere).
PROJECT_MARKERS = ("definitions", "prefect.yaml", "ergon.toml")


def project_root(start: Path) -> Path | None:
    """The nearest folder from ``start`` upward that holds one of :data:`PROJECT_MARKERS`
    (``definitions`` as a folder), or None when no folder up to the file system's root does."""
    for folder in (start, *start.parents):
        if (folder / "definitions").is_dir() or (folder / "prefect.yaml").is_file() or (folder / "ergon.toml").is_file():
            return folder
    return None


def ergon_home_path() -> Path:
    """The state folder's path (``ERGON_HOME``, default ``.ergon``), without creating it."""
    return Path(os.environ.get("ERGON_HOME") or ".ergon").expanduser().resolve()


def private_dir(path: Path) -> Path:
    """``path`` as a folder; created readable by its owner only (0700) — it holds the store, keys
    and Prefect's database. A folder that exists already keeps its mode (it may be shared)."""
    if not path.is_dir():
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
        path.chmod(0o700)  # mkdir's mode is filtered by the umask
    return path


def ergon_home() -> Path:
    """The state folder (created on first use, owner-only)."""
    return private_dir(ergon_home_path())


def prefect_home() -> Path:
    """The home of Ergon's local Prefect server (its database and log), not of the Prefect client:
    the client keeps the user's own home and profiles."""
    return private_dir(ergon_home() / "prefect")


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


def dashboard_url() -> str:
    """Where Ergon's dashboard is served (``ERGON_UI_URL``, default ``ergon ui``'s address), for
    links back to it from elsewhere (Prefect's UI)."""
    return (os.environ.get("ERGON_UI_URL") or "http://127.0.0.1:8501").rstrip("/")


def max_subprocess_depth() -> int:
    """``ERGON_MAX_SUBPROCESS_DEPTH``, else :data:`DEFAULT_MAX_SUBPROCESS_DEPTH`."""
    try:
        return max(1, int(os.environ.get("ERGON_MAX_SUBPROCESS_DEPTH") or DEFAULT_MAX_SUBPROCESS_DEPTH))
    except ValueError:
        return DEFAULT_MAX_SUBPROCESS_DEPTH


def api_lost_seconds() -> float:
    """``ERGON_API_LOST_SECONDS`` (10 to 86,400), else :data:`DEFAULT_API_LOST_SECONDS`."""
    try:
        value = float(os.environ.get("ERGON_API_LOST_SECONDS") or DEFAULT_API_LOST_SECONDS)
    except ValueError:
        return DEFAULT_API_LOST_SECONDS
    return min(max(value, 10.0), 86_400.0) if value == value else DEFAULT_API_LOST_SECONDS
