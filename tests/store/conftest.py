"""Fixtures for the store tests: every test gets its own real SQLite file under ``tmp_path``.

Running the migrations takes about half a second, so they run once per session into a template
file that each test copies; ``init_db`` on the copy then finds the schema at head.
"""

from __future__ import annotations

import shutil

import pytest

from flows.store import db
from flows.store import people as people_store
from flows.store import runs as run_store


@pytest.fixture
def store(tmp_path, monkeypatch, migrated_template) -> str:
    """An empty, migrated store at ``<tmp_path>/ergon.db`` (ERGON_HOME=tmp_path); its URL."""
    monkeypatch.delenv("ERGON_DATABASE_URL", raising=False)
    monkeypatch.setenv("ERGON_HOME", str(tmp_path))
    shutil.copy(migrated_template, tmp_path / "ergon.db")
    url = db.database_url()
    db.init_db(url)
    yield url
    db.dispose_all()


@pytest.fixture
def run(store):
    """A pending run of definition ``d``."""
    return run_store.create_run("d")


@pytest.fixture
def people(store):
    """ann (in group legal), bob, and root (an admin)."""
    people_store.upsert_user("ann")
    people_store.upsert_user("bob")
    people_store.upsert_user("root", is_admin=True)
    people_store.add_to_group("ann", "legal")
    people_store.add_to_group("ann", "legal")  # twice: still one membership
