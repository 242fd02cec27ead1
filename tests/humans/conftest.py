"""Fixtures for the human-task tests: a store copied from a once-migrated template (migrating
costs ~0.5 s a test), the people of the examples, and a paused run with its task."""

from __future__ import annotations

import os
import shutil

import pytest

from flows.store import db
from flows.store import runs as run_store
from flows.store import tasks as task_store
from human_fields import FIELDS


@pytest.fixture
def store(tmp_path, monkeypatch, migrated_template) -> str:
    monkeypatch.delenv("ERGON_DATABASE_URL", raising=False)
    monkeypatch.setenv("ERGON_HOME", str(tmp_path))
    monkeypatch.delenv("ERGON_USER", raising=False)
    monkeypatch.delenv("ERGON_TOKEN", raising=False)
    shutil.copy(migrated_template, tmp_path / "ergon.db")
    url = db.database_url()
    db.init_db(url)
    yield url
    db.dispose_all()


@pytest.fixture(autouse=True)
def _no_hooks(monkeypatch):
    """Answers given in this process reach no Prefect flow run (the tasks here are the store's
    alone); the end-to-end tests answer through `ergon` subprocesses, which do."""
    from flows import humans
    from flows.runs import answers

    monkeypatch.setattr(humans, "on_answered", [])
    monkeypatch.setattr(answers, "deliver", lambda task: None)


@pytest.fixture
def people(store):
    from flows import people as p

    p.add_user("ann", ["legal"])
    p.add_user("bob", ["sales"])
    p.add_user("root", admin=True)
    p.add_user("starter", ["legal"])


@pytest.fixture
def make_task(people):
    """make_task(assignee=..., four_eyes=..., fields=...) → a pending task of a run started by `starter`."""

    def make(assignee: str | None = "group:legal", *, four_eyes: bool = False, fields=None, started_by="starter"):
        run = run_store.create_run("contract_review", started_by=started_by, context={"parties": "ACME / Globex"})
        return task_store.create_task(run.id, "legal_review", "Review ACME / Globex", description="Please review.",
                                      assignee=assignee, fields=FIELDS if fields is None else fields,
                                      four_eyes=four_eyes, pause_key=f"legal-review-{run.id[:6]}")

    return make


@pytest.fixture
def env(prefect_api, store, definitions, tokens):
    """The environment of an `ergon` subprocess on this test's store and definitions, acting as
    `starter` (with starter's personal token); others act with ``--token tokens[name]``."""
    return {**os.environ, "ERGON_DATABASE_URL": store, "ERGON_DEFINITIONS": str(definitions), "COLUMNS": "200",
            "ERGON_TOKEN": tokens["starter"]}
