"""The catalog's conversation tools over a real store: search_conversations pages through runs,
analyze_conversation sends a run's recorded conversation to a model — the scripted
OpenAI-compatible test server, reached over HTTP through the gateway — and returns its answer."""

from __future__ import annotations

import asyncio
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from flows.tools.errors import ToolArgumentError, ToolError
from flows.tools.invoke import invoke

sys.path.insert(0, str(Path(__file__).parents[1] / "llm"))

from fake_openai import FakeOpenAI  # noqa: E402


def call(name, args=None):
    return asyncio.run(invoke(name, args or {}))


@pytest.fixture
def runs(run_ctx):
    """Three finished runs besides the caller's: two of `triage` by ann, one of `billing` by bob."""
    from flows.store import runs as run_store
    from flows.store import visits as visit_store

    made = {}
    for key, definition, who, status in (("t1", "triage", "ann", "completed"), ("t2", "triage", "ann", "failed"),
                                         ("b1", "billing", "bob", "completed")):
        run = run_store.create_run(definition, content={"name": definition}, started_by=who)
        run_store.set_run_status(run.id, "running")
        run_store.set_run_status(run.id, status)
        made[key] = run.id
    visit = visit_store.start_visit(made["t2"], "classify", "agent")
    messages = [{"role": "system", "content": "You triage tickets."},
                {"role": "user", "content": "Ticket 42: the invoice total is wrong."}]
    visit_store.record_llm_call(made["t2"], "openai/gpt-test", visit_id=visit.id, messages=messages,
                                response={"content": None, "tool_calls": [{"id": "c1", "name": "search_documents",
                                                                           "arguments": {"query": "invoice 42"}}]})
    visit_store.record_llm_call(made["t2"], "openai/gpt-test", visit_id=visit.id, messages=messages + [
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {
            "name": "search_documents", "arguments": '{"query": "invoice 42"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "[]"}],
        response={"content": "Category: billing (no invoice found)", "tool_calls": []})
    return made


def test_search_conversations_filters_and_pages(runs, run_ctx):
    everything = call("search_conversations")
    assert everything["total"] == 4  # the caller's own run too
    assert {r["id"] for r in everything["runs"]} == {*runs.values(), run_ctx.run_id}
    triage = call("search_conversations", {"interaction": "triage", "initiator": "ann"})
    assert triage["total"] == 2 and {r["id"] for r in triage["runs"]} == {runs["t1"], runs["t2"]}
    failed = call("search_conversations", {"status": "failed"})
    assert [(r["id"], r["llm_calls"], r["definition_name"]) for r in failed["runs"]] == [(runs["t2"], 2, "triage")]
    assert "inputs" not in failed["runs"][0] and "context" not in failed["runs"][0]
    page = call("search_conversations", {"limit": 2, "offset": 2})
    assert page["total"] == 4 and len(page["runs"]) == 2 and page["offset"] == 2
    later = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    assert call("search_conversations", {"since": later})["total"] == 0
    assert call("search_conversations", {"until": later})["total"] == 4
    with pytest.raises(ToolError, match="ISO 8601"):
        call("search_conversations", {"since": "last tuesday"})
    with pytest.raises(ToolArgumentError):
        call("search_conversations", {"status": "exploded"})


def test_search_conversations_writes_the_whole_result_to_an_artifact(runs, run_ctx):
    from flows.store import artifacts as artifact_store

    out = call("search_conversations", {"interaction": "triage", "output_artifact": "out/triage_runs.json"})
    assert out["written"] == 2 and out["artifact"] == "out/triage_runs.json" and len(out["preview"]) == 2
    (row,) = artifact_store.artifacts_for_run(run_ctx.run_id, key="out/triage_runs.json")
    assert row.type == "json" and {r["id"] for r in row.content} == {runs["t1"], runs["t2"]}


@pytest.fixture
def judge(run_ctx, monkeypatch):
    """The default model is an environment on the scripted server (as a tool body sets it)."""
    from compiler.ir import EnvironmentDef
    from flows.tools.context import CURRENT

    server = FakeOpenAI().start()
    monkeypatch.setenv("FAKE_OPENAI_KEY", "sk-fake-test-key")
    monkeypatch.setenv("ERGON_MODEL", "judge")
    env = EnvironmentDef.model_validate({"kind": "environment", "name": "judge", "models": [
        {"model": "openai/judge-model", "name": "judge-model", "api_base": server.url, "api_key": "env:FAKE_OPENAI_KEY"}]})
    token = CURRENT.set(CURRENT.get().__class__(**{**CURRENT.get().__dict__, "environments": {"judge": env}}))
    yield server
    CURRENT.reset(token)
    server.stop()


def test_analyze_conversation_sends_the_transcript_and_returns_the_schema_shaped_answer(runs, judge):
    judge.script("judge-model", {"json": {"verified": False, "tools": ["search_documents"]}})
    schema = {"type": "object", "properties": {"verified": {"type": "boolean"}, "tools": {"type": "array", "items": {"type": "string"}}},
              "required": ["verified", "tools"]}
    result = call("analyze_conversation", {"run_id": runs["t2"], "analyzer_prompt": "Did the agent verify the total?",
                                           "result_schema": schema})
    assert result == {"run_id": runs["t2"], "status": "failed", "model_calls": 2,
                      "analysis": {"verified": False, "tools": ["search_documents"]}}
    (request,) = judge.for_model("judge-model")
    sent = request.text
    # the last call of the visit is the whole conversation: the ticket, the tool call and the answer
    for expected in ("Ticket 42: the invoice total is wrong.", "search_documents", "Category: billing (no invoice found)",
                     "node classify (2 model calls", "Did the agent verify the total?", f"Run {runs['t2']} of `triage`, status failed"):
        assert expected in sent, expected


def test_analyze_conversation_without_a_schema_answers_in_text(runs, judge):
    judge.script("judge-model", {"json": {"analysis": "The agent found no invoice."}})
    result = call("analyze_conversation", {"run_id": runs["t2"], "analyzer_prompt": "Summarize."})
    assert result["analysis"] == {"analysis": "The agent found no invoice."}
    judge.script("judge-model", {"json": {"result": ["a", "b"]}})
    listed = call("analyze_conversation", {"run_id": runs["t2"], "analyzer_prompt": "List the steps.",
                                           "result_schema": {"type": "array", "items": {"type": "string"}}})
    assert listed["analysis"] == ["a", "b"]
    with pytest.raises(ToolError, match="no run `nope`"):
        call("analyze_conversation", {"run_id": "nope", "analyzer_prompt": "x"})
    with pytest.raises(ToolError, match="no valid JSON Schema"):
        call("analyze_conversation", {"run_id": runs["t2"], "analyzer_prompt": "x", "result_schema": {"type": 3}})
