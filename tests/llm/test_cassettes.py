"""Cassettes (record, replay, loud misses) and resume: a completed call is never repeated."""

from __future__ import annotations

import asyncio
import json

import pytest

from flows.llm.cassettes import use_cassette
from flows.llm.gateway import complete
from flows.llm.types import LlmError, LlmRequest

MESSAGES = [{"role": "user", "content": "Summarize the contract."}]


def ask(req):
    return asyncio.run(complete(req))


def test_record_then_replay_without_the_server(fake, direct, tmp_path, run_id):
    path = tmp_path / "calls.json"
    fake.script("cs-a", {"content": "recorded answer"})
    with use_cassette(record=path):
        first = ask(LlmRequest(messages=MESSAGES, model="openai/cs-a", parameters=direct))
    assert first.content == "recorded answer"
    assert json.loads(path.read_text())["entries"][first.cassette_key]["response"]["content"] == "recorded answer"

    with use_cassette(replay=path):
        again = ask(LlmRequest(messages=MESSAGES, model="openai/cs-a", parameters=direct, run_id=run_id))
    assert again.content == "recorded answer" and again.raw["replayed"] and again.cost_usd == 0
    assert len(fake.requests) == 1  # the replay never reached the server
    from flows.store import visits as visit_store

    [row] = visit_store.llm_calls_for_run(run_id)
    assert row.cassette_key == first.cassette_key and row.error is None


def test_a_replay_miss_fails_loudly(fake, direct, tmp_path, run_id):
    path = tmp_path / "calls.json"
    with use_cassette(record=path):
        ask(LlmRequest(messages=MESSAGES, model="openai/cs-b", parameters=direct))
    changed = [{"role": "user", "content": "Summarize the contract, briefly."}]
    with use_cassette(replay=path), pytest.raises(LlmError, match="cassette miss.*openai/cs-b"):
        ask(LlmRequest(messages=changed, model="openai/cs-b", parameters=direct, run_id=run_id))
    assert len(fake.requests) == 1
    from flows.store import visits as visit_store

    [row] = visit_store.llm_calls_for_run(run_id)
    assert "cassette miss" in row.error


def test_cassettes_from_the_environment(fake, direct, tmp_path, monkeypatch):
    path = tmp_path / "env.json"
    monkeypatch.setenv("ERGON_CASSETTE_RECORD", str(path))
    ask(LlmRequest(messages=MESSAGES, model="openai/cs-c", parameters=direct))
    monkeypatch.delenv("ERGON_CASSETTE_RECORD")
    monkeypatch.setenv("ERGON_CASSETTE_REPLAY", str(path))
    ask(LlmRequest(messages=MESSAGES, model="openai/cs-c", parameters=direct))
    assert len(fake.requests) == 1


def test_the_key_covers_model_messages_tools_and_schema():
    from flows.llm.cassettes import cassette_key

    base = cassette_key("m", MESSAGES, None, None)
    assert base == cassette_key("m", [dict(MESSAGES[0])], None, None)
    assert len({base, cassette_key("n", MESSAGES, None, None), cassette_key("m", MESSAGES, [{"t": 1}], None),
                cassette_key("m", MESSAGES, None, {"type": "object"})}) == 4


def test_resume_reuses_the_completed_call_of_the_unfinished_visit(fake, direct, run_id, visit):
    from flows.store import visits as visit_store

    crashed = visit("summarize")
    first = ask(LlmRequest(messages=MESSAGES, model="openai/cs-r", parameters=direct, run_id=run_id, visit_id=crashed))
    # the process died before the visit completed; resume redoes the node in a new visit
    redo = visit("summarize")
    again = ask(LlmRequest(messages=MESSAGES, model="openai/cs-r", parameters=direct, run_id=run_id, visit_id=redo))
    assert again.content == first.content and len(fake.for_model("cs-r")) == 1
    original = visit_store.llm_calls_for_run(run_id, visit_id=crashed)[0]
    [reused] = visit_store.llm_calls_for_run(run_id, visit_id=redo)
    assert reused.response["reused_from"] == original.id and reused.cost_usd == 0
    # a different request, or a retry (next attempt), does call the model
    ask(LlmRequest(messages=MESSAGES, model="openai/cs-r", parameters=direct, run_id=run_id, visit_id=visit("summarize", 2)))
    assert len(fake.for_model("cs-r")) == 2


def test_a_completed_visit_is_not_a_source_of_reuse(fake, direct, run_id, visit):
    from datetime import datetime, timezone

    from flows.store import visits as visit_store

    done = visit("loop")
    ask(LlmRequest(messages=MESSAGES, model="openai/cs-l", parameters=direct, run_id=run_id, visit_id=done))
    visit_store.close_visit(done, run_id, started_at=datetime.now(timezone.utc), status="completed")
    ask(LlmRequest(messages=MESSAGES, model="openai/cs-l", parameters=direct, run_id=run_id, visit_id=visit("loop")))
    assert len(fake.for_model("cs-l")) == 2
