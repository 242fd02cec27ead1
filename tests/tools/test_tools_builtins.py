"""The built-in tools: think, plan/update_plan, artifacts, documents — against a real store."""

from __future__ import annotations

import asyncio

import pytest

from flows.tools.errors import ToolArgumentError, ToolError
from flows.tools.invoke import invoke


def call(name, args=None):
    return asyncio.run(invoke(name, args or {}))


def test_builtin_names_match_the_compiler():
    import flows.tools.builtins  # noqa: F401
    from compiler.tools import BUILTIN_TOOLS
    from flows.tools import REGISTRY

    engine_handled = {"set_context", "ask_user"}  # the engine and human tasks, not tool functions
    assert set(BUILTIN_TOOLS) - engine_handled <= set(REGISTRY)


def test_think(run_ctx):
    assert call("think", {"thought": "first the totals"}) == {"ok": True}


def test_plan_and_update_plan_are_versioned_artifacts(run_ctx):
    from flows.store import artifacts as artifact_store

    plan = call("plan", {"steps": ["read the contract", "flag clauses", " "]})
    assert plan["version"] == 1
    assert [(s["index"], s["title"], s["status"]) for s in plan["steps"]] == [
        (1, "read the contract", "pending"), (2, "flag clauses", "pending")]
    updated = call("update_plan", {"step_index": 1, "status": "completed", "note": "done"})
    assert updated["version"] == 2 and updated["steps"][0] == {
        "index": 1, "title": "read the contract", "status": "completed", "note": "done"}
    rows = artifact_store.artifacts_for_run(run_ctx.run_id, key="plan")
    assert [(r.version, r.type, r.visit_id) for r in rows] == [(1, "json", run_ctx.visit_id), (2, "json", run_ctx.visit_id)]
    with pytest.raises(ToolError, match="between 1 and 2"):
        call("update_plan", {"step_index": 3, "status": "completed"})
    with pytest.raises(ToolArgumentError, match="status"):
        call("update_plan", {"step_index": 1, "status": "finished"})


def test_update_plan_without_a_plan(run_ctx):
    with pytest.raises(ToolError, match="call `plan` first"):
        call("update_plan", {"step_index": 1, "status": "completed"})


def test_artifacts_write_read_list(run_ctx):
    assert call("write_artifact", {"key": "report", "content": "# v1"}) == {"key": "report", "version": 1, "type": "markdown"}
    call("write_artifact", {"key": "report", "content": "# v2", "description": "the report"})
    call("write_artifact", {"key": "totals", "content": {"n": 3}, "type": "json"})
    latest = call("read_artifact", {"key": "report"})
    assert (latest["version"], latest["content"], latest["description"]) == (2, "# v2", "the report")
    assert call("read_artifact", {"key": "report", "version": 1})["content"] == "# v1"
    listed = call("list_artifacts")
    assert [(a["key"], a["version"], a["type"]) for a in listed] == [("report", 2, "markdown"), ("totals", 1, "json")]
    assert "content" not in listed[0]
    with pytest.raises(ToolError, match="no artifact `nope`.*report, totals"):
        call("read_artifact", {"key": "nope"})
    with pytest.raises(ToolError, match="versions 1 to 2, not 7"):
        call("read_artifact", {"key": "report", "version": 7})
    with pytest.raises(ToolError, match="must be text"):
        call("write_artifact", {"key": "x", "content": {"a": 1}})
    with pytest.raises(ToolArgumentError, match="type"):
        call("write_artifact", {"key": "x", "content": "a", "type": "pdf"})


def test_artifact_tools_need_a_run(store):
    import flows.tools.builtins  # noqa: F401

    with pytest.raises(ToolError, match="needs a run"):
        call("list_artifacts")


def test_documents_fetch_search_create(run_ctx, home):
    from flows import documents

    (home / "a.txt").write_text("Invoice payment terms: net 30. Payment by wire.", encoding="utf-8")
    (home / "b.md").write_text("Travel policy. Economy class; receipts for every payment.", encoding="utf-8")
    (home / "c.txt").write_text("Nothing relevant here.", encoding="utf-8")
    a = documents.add(home / "a.txt")
    documents.add(home / "b.md", id="travel")
    documents.add(home / "c.txt")
    assert a["id"] == "a" and a["content_type"] == "text/plain" and a["size"] == 47

    doc = call("fetch_document", {"id": "travel"})
    assert doc["content"].startswith("Travel policy") and doc["content_type"] == "text/markdown" and not doc["truncated"]
    cut = call("fetch_document", {"id": "a", "max_chars": 7})
    assert (cut["content"], cut["truncated"], cut["size"]) == ("Invoice", True, 47)
    with pytest.raises(ToolError, match="no document `zzz`"):
        call("fetch_document", {"id": "zzz"})
    with pytest.raises(ToolError, match="invalid document id"):
        call("fetch_document", {"id": "../etc/passwd"})

    hits = call("search_documents", {"query": "payment terms"})
    assert [h["id"] for h in hits] == ["a", "travel"]  # a has both words, twice "payment"
    assert hits[0]["score"] > hits[1]["score"] and "payment terms" in hits[0]["snippet"].lower()
    assert call("search_documents", {"query": "payment terms"}) == hits  # deterministic
    assert call("search_documents", {"query": "payment", "limit": 1})[0]["id"] == "a"
    assert call("search_documents", {"query": "unicorn"}) == []

    made = call("create_document", {"name": "Summary.md", "content": "All good."})
    assert made["id"] == "summary" and documents.get("summary")["content"] == "All good."
    call("write_artifact", {"key": "memo", "content": "# Memo\nPay on time."})
    from_artifact = call("create_document", {"name": "memo.md", "source": "artifact:memo"})
    assert documents.get(from_artifact["id"])["content"] == "# Memo\nPay on time."
    assert from_artifact["source"] == "artifact:memo"
    call("write_artifact", {"key": "data", "content": {"k": 1}, "type": "json"})
    assert '"k": 1' in documents.get(call("create_document", {"name": "data.json", "source": "artifact:data"})["id"])["content"]
    with pytest.raises(ToolError, match="exactly one"):
        call("create_document", {"name": "x"})
    with pytest.raises(ToolError, match="no artifact `nope`"):
        call("create_document", {"name": "x", "source": "artifact:nope"})
    with pytest.raises(ToolError, match="must be `artifact:<key>`"):
        call("create_document", {"name": "x", "source": "https://example.com/x"})


def test_document_ids_are_unique_and_binary_files_refused(home):
    from flows import documents

    (home / "r.txt").write_text("x", encoding="utf-8")
    assert [documents.add(home / "r.txt")["id"] for _ in range(3)] == ["r", "r-2", "r-3"]
    with pytest.raises(documents.DocumentError, match="already exists"):
        documents.add(home / "r.txt", id="r")
    assert documents.add(home / "r.txt", id="r", replace=True)["id"] == "r"
    (home / "bin.dat").write_bytes(b"\xff\xfe\x00\x81")
    with pytest.raises(documents.DocumentError, match="not UTF-8"):
        documents.add(home / "bin.dat")
    assert [d["id"] for d in documents.list_documents()] == ["r", "r-2", "r-3"]


def test_documents_cli(home, capsys):
    import json

    from flows.cli import run

    (home / "policy.txt").write_text("Refunds within 14 days.", encoding="utf-8")
    assert run(["documents", "add", str(home / "policy.txt")]) == 0
    assert run(["documents", "add", str(home / "policy.txt"), "--id", "refunds"]) == 0
    assert run(["documents", "add", str(home / "policy.txt"), "--id", "refunds"]) == 1
    assert run(["documents", "add", str(home / "missing.txt")]) == 1
    capsys.readouterr()
    assert run(["documents", "list", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)["documents"]
    assert [(d["id"], d["name"], d["size"]) for d in listed] == [("policy", "policy.txt", 23), ("refunds", "policy.txt", 23)]
    assert run(["documents", "list"]) == 0
    assert "2 document(s)" in capsys.readouterr().out
    assert run(["documents", "show", "refunds"]) == 0
    assert capsys.readouterr().out.strip() == "Refunds within 14 days."
    assert run(["documents", "search", "refunds", "--json"]) == 0
    assert [h["id"] for h in json.loads(capsys.readouterr().out)["hits"]] == ["policy", "refunds"]


def test_log_takes_any_json_value_and_logs_its_text(caplog):
    import flows.tools.builtins  # noqa: F401
    import logging

    with caplog.at_level(logging.INFO, logger="ergon.tools"):
        assert call("log", {"message": 42}) == {"logged": "42"}
        assert call("log", {"message": {"n": 1, "tags": ["a"]}}) == {"logged": '{"n": 1, "tags": ["a"]}'}
        assert call("log", {"message": None, "level": "warning"}) == {"logged": "null"}
        assert call("log", {"message": "plain text"}) == {"logged": "plain text"}
    assert [r.getMessage() for r in caplog.records if r.name == "ergon.tools"][-4:] == [
        "42", '{"n": 1, "tags": ["a"]}', "null", "plain text"]
