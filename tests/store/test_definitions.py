"""Definitions: content snapshots, drafts and published versions."""

from __future__ import annotations

import pytest

from flows.store import db
from flows.store import definitions as definition_store
from flows.store import runs as run_store
from flows.store.errors import NotFound


def test_snapshots_are_stored_once_per_content(store):
    a = run_store.create_run("d", content={"b": 1, "a": [1, 2]})
    b = run_store.create_run("d", content={"a": [1, 2], "b": 1})  # same content, other key order
    c = run_store.create_run("d", content={"a": [2, 1], "b": 1})
    assert a.content_hash == b.content_hash != c.content_hash
    assert definition_store.snapshot_definition({"b": 1, "a": [1, 2]}) == a.content_hash
    with db.get_engine(store).connect() as conn:
        assert conn.exec_driver_sql("select count(*) from definition_snapshots").scalar() == 2


def test_drafts_and_published_versions(store):
    definition_store.save_draft("contract_review", "process", {"v": 1})
    v1 = definition_store.publish_definition("contract_review", comment="first", published_by="ann")
    definition_store.save_draft("contract_review", "process", {"v": 2})
    v2 = definition_store.publish_definition("contract_review")
    assert (v1.version, v2.version, v1.content, v2.content) == (1, 2, {"v": 1}, {"v": 2})
    assert definition_store.get_version("contract_review").version == 2
    assert definition_store.get_version("contract_review", 1).comment == "first"
    assert [v.version for v in definition_store.list_versions("contract_review")] == [2, 1]
    assert definition_store.get_snapshot(v1.content_hash) == {"v": 1}
    d = definition_store.get_definition("contract_review")
    assert d.draft_content == {"v": 2} and d.draft_hash == v2.content_hash
    assert [x.name for x in definition_store.list_definitions()] == ["contract_review"]
    with pytest.raises(NotFound):
        definition_store.publish_definition("unknown")
    run = run_store.create_run("contract_review", definition_version=1, content_hash=v1.content_hash)
    assert definition_store.get_snapshot(run_store.get_run(run.id).content_hash) == {"v": 1}
