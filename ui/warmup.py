"""The pages' imports, done in the background while the dashboard server starts.

A freshly started server has imported Streamlit and the sign-in routes only. The first page a
browser asks for would import the rest before it can draw anything: the engine's run functions
(``flows.runs``, which brings the compiler, SQLAlchemy and pydantic models; about 0.75 s on this
2-core machine on 2026-12-06), and for the other pages pandas and its Styler (about 0.45 s),
pyarrow for Streamlit's tables, and the graph renderer for a run's page. :func:`start` imports
them in a daemon thread in two steps: what the Runs page (the first page) needs as soon as
Streamlit's runtime has started (so the health check answers as soon as without them, and they
are done while the browser is still fetching and starting Streamlit's JavaScript, a second and
more), the rest once the first page's script run has finished, so that the two do not share
the interpreter. Importing is thread-safe: a page that needs a module still being imported
waits for it, it never sees half of it.
"""

from __future__ import annotations

import importlib
import logging
import threading
import time

#: What the first page (Runs) imports beyond Streamlit, the heaviest first: imported as soon as
#: the server has started.
FIRST = (
    "flows.runs",
    "flows.store.runs", "flows.store.visits", "flows.store.tasks", "flows.prefect.server",
    # Streamlit reads the page icon with these, even an SVG one: 0.1-0.3 s of the first script run
    "numpy", "PIL.Image",
)
#: What the other pages import (pandas, its Styler and pyarrow for their tables, the graph
#: renderer for a run's page): imported once the first page's script run has finished, so that
#: it does not share the interpreter with that run (on two cores the first Runs page's script run
#: took about twice as long while pandas and pyarrow were being imported beside it).
LATER = (
    "flows.store.artifacts", "flows.store.submissions", "flows.store.export",
    "pandas", "pandas.io.formats.style", "pyarrow",
    "compiler.render", "flows.catalog", "yaml",
)
MODULES = FIRST + LATER
#: How long the later imports wait for a first page at most (a server nobody opens yet).
LATER_AFTER = 20.0

_first_page = threading.Event()

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


def _import(names: tuple[str, ...]) -> None:
    for name in names:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - a page that needs it reports the failure where it shows
            log.debug("warm-up import of %s failed", name, exc_info=True)


def _prepare_store() -> None:
    """The store's schema check, done once per process and database (``flows.store.db.init_db``;
    the first page's ``boot()`` finds it done)."""
    try:
        from flows.store import db

        db.init_db()
    except Exception:  # noqa: BLE001 - the first page runs it again and reports the failure there
        log.debug("warm-up schema check failed", exc_info=True)


def _import_all() -> None:
    _server_started()
    _import(FIRST)
    _prepare_store()
    _first_page.wait(LATER_AFTER)
    _import(LATER)


def first_page_drawn() -> None:
    """The first page's script run has finished (called by ``ui/app.py`` after each page): the
    imports of :data:`LATER` may start."""
    _first_page.set()


def start() -> threading.Thread:
    """Import :data:`FIRST` in a daemon thread once the server has started and check the store's
    schema, then import :data:`LATER`
    once a first page has been drawn (or after :data:`LATER_AFTER` seconds); returns the thread."""
    thread = threading.Thread(target=_import_all, name="ergon-ui-warmup", daemon=True)
    thread.start()
    return thread
