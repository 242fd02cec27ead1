"""Which definitions a run came from, so that it can be continued from anywhere.

A run started from a file path (``ergon run some/dir/x.yaml``) compiles against a catalog of the
definitions folder *plus* that file and its folder (with the folder's ``tools/``). Everything
that continues or repeats the run later — ``ergon runs resume``, the dashboard's resume and
replay, a pending run executed by ``ergon run NAME --run-id`` — must rebuild that same catalog,
from whatever folder it is started in. So every run records what its catalog was loaded from
(:attr:`flows.catalog.Catalog.sources`: absolute paths) in ``runs.catalog_sources`` when it is
recorded (:func:`flows.runs.lifecycle.create`; a run its flow body creates, by its recorder), and
:func:`catalog_for_run` loads exactly that. Runs recorded before the column existed (``NULL``)
fall back to the current definitions folder, as before.
"""

from __future__ import annotations

from typing import Any

from flows.catalog import Catalog
from flows.store import db
from flows.store import runs as run_store


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
