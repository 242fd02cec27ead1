"""Structured output over HTTP: parsing, validation, the repair turn, and failing for good."""

from __future__ import annotations

import asyncio

import pytest

from flows.llm.structured import parse_json, structured
from flows.llm.types import InvalidOutput, LlmRequest

SCHEMA = {
    "type": "object",
    "properties": {"gl_code": {"type": "string", "enum": ["6100", "6200"]}, "amount": {"type": "number"}},
    "required": ["gl_code", "amount"],
    "additionalProperties": False,
}
MESSAGES = [{"role": "user", "content": "Classify: laptop, 1200 EUR"}]


def run(req, **kw):
    return asyncio.run(structured(req, SCHEMA, **kw))


@pytest.mark.parametrize("text", [
    '{"a": 1}', '```json\n{"a": 1}\n```', 'Sure! Here it is:\n```\n{"a": 1}\n```', 'The answer is {"a": 1}.',
])
def test_parse_json_finds_the_object(text):
    assert parse_json(text) == {"a": 1}


def test_valid_answer_on_the_first_turn(fake, direct, run_id):
    fake.script("st-ok", {"json": {"gl_code": "6200", "amount": 1200}})
    value, responses = run(LlmRequest(messages=MESSAGES, model="openai/st-ok", parameters=direct, run_id=run_id))
    assert value == {"gl_code": "6200", "amount": 1200} and len(responses) == 1


def test_a_wrong_answer_is_repaired_with_the_errors_shown(fake, direct, run_id):
    fake.script("st-fix", {"json": {"gl_code": "9999", "amount": "lots"}}, {"json": {"gl_code": "6100", "amount": 5}})
    value, responses = run(LlmRequest(messages=MESSAGES, model="openai/st-fix", parameters=direct, run_id=run_id))
    assert value == {"gl_code": "6100", "amount": 5} and len(responses) == 2
    repair_prompt = fake.requests[1].body["messages"]
    assert repair_prompt[-2]["role"] == "assistant" and "9999" in repair_prompt[-2]["content"]
    assert "'9999' is not one of" in repair_prompt[-1]["content"] and "amount" in repair_prompt[-1]["content"]
    from flows.store import visits as visit_store

    assert [c.repair for c in visit_store.llm_calls_for_run(run_id)] == [False, True]


def test_a_wrong_answer_that_stays_wrong_fails(fake, direct):
    fake.script("st-bad", {"content": "I think it is software."}, {"content": "Still prose, sorry."})
    with pytest.raises(InvalidOutput) as failure:
        run(LlmRequest(messages=MESSAGES, model="openai/st-bad", parameters=direct))
    assert failure.value.errors == ["the answer is not JSON"] and len(failure.value.responses) == 2
    assert len(fake.for_model("st-bad")) == 2


def test_extra_fields_are_refused(fake, direct):
    extra = {"gl_code": "6100", "amount": 5, "comment": "extra"}
    fake.script("st-extra", {"json": extra}, {"json": extra})
    with pytest.raises(InvalidOutput, match="Additional properties are not allowed"):
        run(LlmRequest(messages=MESSAGES, model="openai/st-extra", parameters=direct))


def test_repair_turns_are_configurable(fake, direct):
    fake.script("st-zero", {"json": {"gl_code": "x", "amount": 1}})
    with pytest.raises(InvalidOutput):
        run(LlmRequest(messages=MESSAGES, model="openai/st-zero", parameters=direct), repair_turns=0)
    assert len(fake.for_model("st-zero")) == 1


def test_offline_answers_are_valid_without_repair():
    value, responses = run(LlmRequest(messages=MESSAGES))
    assert value["gl_code"] in ("6100", "6200") and responses[0].offline
