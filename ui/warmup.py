"""The first page's imports, done in the background while the dashboard server starts.

A freshly started server has imported Streamlit and the sign-in routes only. The first page a
browser asks for would import the rest before it can draw anything: the engine's run functions
(``flows.runs``, which brings the compiler, SQLAlchemy and pydantic models; about 0.75 s on this
2-core machine on 2026-12-06), pandas and its Styler for the runs table (about 0.45 s), pyarrow
for Streamlit's tables, and the graph renderer for a run's page. :func:`start` imports them in a
daemon thread as the server starts listening, so they are done while the browser is still
fetching and starting Streamlit's JavaScript (a second and more). They begin once Streamlit's
runtime has started, so the health check answers as soon as without them, and the first page
finds them loaded. Importing is thread-safe: a page that needs a module still being imported
waits for it, it never sees half of it.
"""

from __future__ import annotations

import importlib
import logging
import threading
import time

#: What the pages import beyond Streamlit, the heaviest first (the Runs page needs them first).
MODULES = (
    "flows.runs",
    "flows.store.runs", "flows.store.visits", "flows.store.tasks", "flows.store.artifacts",
    "flows.store.submissions", "flows.store.export", "flows.prefect.server",
    "pandas", "pandas.io.formats.style", "pyarrow",
    "compiler.render", "flows.catalog", "yaml",
)

log = logging.getLogger("ergon.ui")


def _server_started(timeout: float = 60.0) -> None:
    """Wait until Streamlit's runtime has started (it answers health checks from then on), so
    that the imports do not hold up the server's own start: both need the interpreter, and on
    two cores the start took 0.65 s longer when they ran side by side. Streamlit's runtime state
    is internal: if it cannot be read, or never changes, the imports start after ``timeout``."""
    deadline = time.monotonic() + timeout
    try:
        from streamlit.runtime import Runtime
        from streamlit.runtime.runtime import RuntimeState

        while time.monotonic() < deadline:
            if Runtime.exists() and Runtime.instance().state != RuntimeState.INITIAL:
                return
            time.sleep(0.05)
    except Exception:  # noqa: BLE001 - only the timing of the warm-up depends on it
        log.debug("could not read Streamlit's runtime state", exc_info=True)


def _import_all() -> None:
    _server_started()
    for name in MODULES:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - a page that needs it reports the failure where it shows
            log.debug("warm-up import of %s failed", name, exc_info=True)


def start() -> threading.Thread:
    """Import :data:`MODULES` in a daemon thread once the server has started; returns the thread."""
    thread = threading.Thread(target=_import_all, name="ergon-ui-warmup", daemon=True)
    thread.start()
    return thread
