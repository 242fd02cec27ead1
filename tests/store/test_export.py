"""A run exported whole: one JSON document with everything of the run."""

from __future__ import annotations

import json

import pytest

from flows.store import artifacts as artifact_store
from flows.store import export as export_store
from flows.store import runs as run_store
from flows.store import tasks as task_store
from flows.store import visits as visit_store
from flows.store.errors import NotFound


def test_export_run_is_one_json_document(store):
    run = run_store.create_run("d", content={"process": "p"}, inputs={"a": 1})
    visit = visit_store.start_visit(run.id, "ask", "agent", input={"q": 1})
    visit_store.record_llm_call(run.id, "offline/echo", visit_id=visit.id, messages=[{"role": "user", "content": "hi"}],
                                response={"content": "yo"}, tokens_in=3, tokens_out=2, cost_usd=0.01)
    visit_store.record_tool_call(run.id, "fetch", visit_id=visit.id, args={"url": "u"}, result={"ok": True})
    visit_store.finish_visit(visit.id, output={"a": 2}, context_diff=[{"op": "replace", "path": "/a", "old": 1, "new": 2}])
    artifact_store.record_artifact(run.id, "report", "markdown", "# hi", visit_id=visit.id)
    task = task_store.create_task(run.id, "approve", "Approve?", fields=[{"name": "ok", "type": "boolean"}])
    child = run_store.create_run("c", parent_run_id=run.id)

    doc = json.loads(json.dumps(export_store.export_run(run.id)))
    assert doc["format"] == "ergon.run/1"
    assert doc["run"]["id"] == run.id and doc["run"]["tokens"] == 5
    assert doc["definition"] == {"process": "p"}
    assert [v["node_id"] for v in doc["visits"]] == ["ask"]
    assert doc["visits"][0]["context_diff"][0]["new"] == 2
    assert [a["key"] for a in doc["artifacts"]] == ["report"]
    assert doc["llm_calls"][0]["response"] == {"content": "yo"}
    assert doc["tool_calls"][0]["tool"] == "fetch"
    assert doc["tasks"][0]["id"] == task.id and doc["tasks"][0]["events"][0]["action"] == "created"
    assert doc["children"] == [child.id]
    with pytest.raises(NotFound):
        export_store.export_run("missing")
