"""Artifacts: versioned per run and key."""

from __future__ import annotations


import pytest

from flows.store import artifacts as artifact_store
from flows.store import runs as run_store
from flows.store.errors import StoreError


def test_artifacts_are_versioned_per_run_and_key(store, run):
    other = run_store.create_run("d")
    a1 = artifact_store.record_artifact(run.id, "summary", "markdown", "# v1", description="first")
    a2 = artifact_store.record_artifact(run.id, "summary", "markdown", "# v2")
    t1 = artifact_store.record_artifact(run.id, "terms", "table", [{"a": 1}])
    o1 = artifact_store.record_artifact(other.id, "summary", "json", {"x": 1})
    assert (a1.version, a2.version, t1.version, o1.version) == (1, 2, 1, 1)
    rows = artifact_store.artifacts_for_run(run.id)
    assert [(r.key, r.version, r.content) for r in rows] == [
        ("summary", 1, "# v1"), ("summary", 2, "# v2"), ("terms", 1, [{"a": 1}])]
    assert [r.version for r in artifact_store.artifacts_for_run(run.id, latest_only=True)] == [2, 1]
    assert [r.version for r in artifact_store.artifacts_for_run(run.id, key="summary")] == [1, 2]
    assert artifact_store.get_artifact(a1.id).description == "first"
    with pytest.raises(StoreError, match="artifact type"):
        artifact_store.record_artifact(run.id, "x", "video", None)
