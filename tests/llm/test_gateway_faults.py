"""Provider faults over real HTTP: each fails the call with the fault named in words, within the
call's overall deadline, and every attempt is recorded."""

from __future__ import annotations

import asyncio
import time

import pytest

from flows.llm.gateway import complete
from flows.llm.types import LlmError, LlmRequest

MESSAGES = [{"role": "user", "content": "Say hi."}]


def ask(req: LlmRequest):
    return asyncio.run(complete(req))


def test_a_hung_endpoint_fails_within_the_overall_deadline(fake, direct, run_id):
    fake.script("hang-a", *[{"delay": 5}] * 5)
    started = time.monotonic()
    with pytest.raises(LlmError) as failed:
        ask(LlmRequest(messages=MESSAGES, model="openai/hang-a", run_id=run_id,
                       parameters={**direct, "timeout": 2, "retries": 4, "deadline": 2.5}))
    took = time.monotonic() - started
    # five attempts of 2 s each would take 10 s: the deadline ends the call after 2.5 s
    assert took < 5, f"the deadline of 2.5 s was not kept ({took:.1f} s)"
    assert "timed out" in str(failed.value) or "deadline" in str(failed.value)


def test_every_attempt_of_a_retried_call_is_recorded(fake, direct, run_id):
    from flows.store import visits as visit_store

    fake.script("retry-rec", {"status": 500}, {"status": 429}, {"content": "fine"})
    resp = ask(LlmRequest(messages=MESSAGES, model="openai/retry-rec", parameters=direct, run_id=run_id))
    assert resp.content == "fine"
    rows = visit_store.llm_calls_for_run(run_id)
    assert len(rows) == 3, [r.error for r in rows]
    failed = [r.error for r in rows if r.error]
    assert len(failed) == 2 and "server error (HTTP 500)" in failed[0] and "rate limited (HTTP 429)" in failed[1]


def test_an_empty_choices_list_is_named(fake, direct):
    fake.script("empty-choices", {"choices": []})
    with pytest.raises(LlmError) as failed:
        ask(LlmRequest(messages=MESSAGES, model="openai/empty-choices", parameters={**direct, "retries": 0}))
    assert "no choices" in str(failed.value) and "IndexError" not in str(failed.value)


@pytest.mark.parametrize("body, words", [
    ("<html><body>502 Bad Gateway</body></html>", "not a JSON completion"),
    ('{"id": "chatcmpl-fake", "choices": [{"index": 0, "mess', "not a JSON completion"),
])
def test_a_body_that_is_not_a_completion_is_named(fake, direct, body, words):
    fake.script("bad-body", {"body": body, "content_type": "text/html"})
    with pytest.raises(LlmError) as failed:
        ask(LlmRequest(messages=MESSAGES, model="openai/bad-body", parameters={**direct, "retries": 0}))
    assert words in str(failed.value), str(failed.value)
