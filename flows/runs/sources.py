"""Which definitions a run came from, so that it can be continued from anywhere.

A run started from a file path (``ergon run some/dir/x.yaml``) compiles against a catalog of the
definitions folder *plus* that file and its folder (with the folder's ``tools/``). Everything
that continues or repeats the run later — ``ergon runs resume``, the dashboard's resume and
replay, a pending run executed by ``ergon run NAME --run-id`` — must rebuild that same catalog,
from whatever folder it is started in. So every run records what its catalog was loaded from
(:attr:`flows.catalog.Catalog.sources`: absolute paths) in ``runs.catalog_sources``, and
:func:`catalog_for_run` loads exactly that. Runs recorded before the column existed (``NULL``)
fall back to the current definitions folder, as before.
"""

from __future__ import annotations

from typing import Any

from flows.catalog import Catalog
from flows.store import db
from flows.store import runs as run_store


def record(run_id: str, catalog: Any) -> None:
    """Store what ``catalog`` was loaded from on the run (a catalog built in memory has nothing)."""
    sources = getattr(catalog, "sources", None)
    if sources:
        run_store.update_run(run_id, catalog_sources=list(sources))


def catalog_for_run(run: Any) -> Catalog:
    """The catalog ``run`` was started with; raises :class:`flows.catalog.DefinitionNotFound`
    when its recorded folder or file no longer exists."""
    sources = getattr(run, "catalog_sources", None)
    return Catalog.from_sources(sources) if sources else Catalog.load()


def catalog_for_start(name: str, run_id: str | None) -> Catalog:
    """The catalog ``ergon run NAME [--run-id ID]`` compiles against: the pending run's recorded
    one when it has one (started by the dashboard, a webhook, a chain), else ``NAME``'s."""
    if run_id is not None:
        db.init_db()
        pending = run_store.get_run(run_id)
        if pending is not None and pending.catalog_sources:
            return Catalog.from_sources(pending.catalog_sources)
    return Catalog.load(name)
