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
the interpreter — a run's page first, the page most often opened next, then the tables' pandas
and pyarrow. Importing is thread-safe: a page that needs a module still being imported
waits for it, it never sees half of it.

Beyond imports, the first step reads the queries of the crash detection each new session runs
(SQLAlchemy configures the models and compiles them once), and the second loads the definitions
folder into the dashboard's cache, as a run's page would on its first draw: a run's page opened
right after the first page took 0.6 s of script run before, 0.15 s after (2026-12-07). After
each step the start-up heap is frozen (:func:`_freeze`), so that Streamlit's collection after
every script run stops walking it.
"""

from __future__ import annotations

import gc
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
    # the first page's own modules, and the icon names Streamlit checks an icon against
    "ui.auth", "ui.boot", "ui.format", "ui.nav", "ui.runs_table", "streamlit.material_icon_names",
)
#: What a run's page imports, the page most often opened from the first one (the graph renderer,
#: its own modules, the tools its plan's definitions are checked against): imported once the
#: first page's script run has finished, so that it does not share the interpreter with that run.
NEXT = (
    "compiler.render", "flows.catalog", "yaml",
    "ui.graph", "ui.json_view", "ui.timeline", "ui.conversation", "ui.route", "ui.workstreams", "ui.artifact_view",
    "flows.tools.builtins", "flows.tools.skills", "flows.store.run_events",
    "flows.store.artifacts", "flows.store.submissions", "flows.store.export",
    "flows.runs.controls",  # a run's actions: it brings the engine and the model layer (0.1 s)
)
#: What the pages with tables import (pandas, its Styler and pyarrow), after :data:`NEXT` and the
#: definitions folder: a run opened from the first page as soon as it was drawn took 0.2 s of
#: script run (0.02-0.05 s alone) while pandas and pyarrow were still being imported before it
#: (2026-12-07).
LATER = ("pandas", "pandas.io.formats.style", "pyarrow")
MODULES = FIRST + NEXT + LATER
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
    the first page's ``boot()`` finds it done), and the queries of the crash detection each new
    session runs, read once so that SQLAlchemy has configured the models and compiled them
    (about 0.1 s of the first page's script run otherwise). Reads only: marking runs crashed is
    the session's, which reports what it found."""
    try:
        from flows.store import db
        from flows.store import runs as run_store

        db.init_db()
        run_store.warm_crash_detection()
    except Exception:  # noqa: BLE001 - the first page runs it again and reports the failure there
        log.debug("warm-up schema check failed", exc_info=True)


def _load_catalog() -> None:
    """The definitions folder loaded and checked into the dashboard's cache (``ui/catalog.py``),
    as the first page of a run or of the definitions would (0.2-0.3 s for a small folder)."""
    try:
        from ui import catalog

        catalog.catalog()
    except Exception:  # noqa: BLE001 - the page that needs it loads it again and reports the failure
        log.debug("warm-up load of the definitions folder failed", exc_info=True)


def _freeze() -> None:
    """Collect, then move every object the process holds into the permanent generation
    (:func:`gc.freeze`). Streamlit collects all generations after every script run
    (``runner.postScriptGC``): each page draw and each live refresh of the Runs page then held
    the interpreter for about 0.1 s walking the ~185,000 objects the pages' imports made, which
    live as long as the server (2026-12-07, this 2-core machine); once frozen that walk takes
    no measurable time. What is frozen is what the imports and Streamlit's start made, and at
    most the objects of a page being drawn at that moment (kept, never collected: a few KB)."""
    gc.collect()
    gc.freeze()


def _import_all() -> None:
    _server_started()
    _import(FIRST)
    _prepare_store()
    _freeze()
    _first_page.wait(LATER_AFTER)
    _import(NEXT)
    _load_catalog()
    _freeze()
    _import(LATER)
    _freeze()


def first_page_drawn() -> None:
    """The first page's script run has finished (called by ``ui/app.py`` after each page): the
    imports of :data:`NEXT` and :data:`LATER` may start."""
    _first_page.set()


def start() -> threading.Thread:
    """Import :data:`FIRST` in a daemon thread once the server has started and check the store's
    schema, then import :data:`NEXT`, load the definitions folder and import :data:`LATER` once a
    first page has been drawn (or after :data:`LATER_AFTER` seconds); returns the thread."""
    thread = threading.Thread(target=_import_all, name="ergon-ui-warmup", daemon=True)
    thread.start()
    return thread
