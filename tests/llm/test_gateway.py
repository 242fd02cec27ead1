"""The gateway against a real HTTP server: model resolution, retries, failover, cost, records, secrets."""

from __future__ import annotations

import asyncio
import json

import pytest

from flows.llm.gateway import complete, resolve_target
from flows.llm.types import LlmError, LlmRequest

MESSAGES = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Say hi."}]


def ask(req: LlmRequest, **kw):
    return asyncio.run(complete(req, **kw))


def test_no_model_means_offline_and_ergon_model_overrides(monkeypatch):
    assert resolve_target(None, {}).kind == "offline"
    monkeypatch.setenv("ERGON_MODEL", "openai/gpt-4o-mini")
    assert resolve_target(None, {}).name == "openai/gpt-4o-mini"
    resp = ask(LlmRequest(messages=MESSAGES, model="ergon/offline"))
    assert resp.offline and resp.model == "ergon/offline" and resp.cost_usd == 0


def test_plain_model_string_over_http_is_recorded(fake, direct, run_id, visit):
    vid = visit()
    resp = ask(LlmRequest(messages=MESSAGES, model="openai/plain-a", parameters=direct, run_id=run_id, visit_id=vid))
    assert resp.content == "ok from fake" and not resp.offline
    assert resp.tokens_in > 0 and resp.tokens_out > 0 and resp.latency_ms > 0
    # litellm does not price this model: the call still succeeds, cost 0 and flagged
    assert resp.cost_usd == 0 and resp.raw["cost_source"] == "unpriced"
    from flows.store import runs as run_store
    from flows.store import visits as visit_store

    [row] = visit_store.llm_calls_for_run(run_id, visit_id=vid)
    assert row.model == "openai/plain-a" and row.messages == MESSAGES and row.response["content"] == "ok from fake"
    assert row.tokens_in == resp.tokens_in and row.error is None and row.cassette_key == resp.cassette_key
    assert run_store.get_run(run_id).tokens == resp.tokens_in + resp.tokens_out


def test_429_then_success_retries_with_exponential_backoff(fake, direct, sleeps):
    fake.script("plain-b", {"status": 429}, {"status": 503})
    resp = ask(LlmRequest(messages=MESSAGES, model="openai/plain-b", parameters=direct))
    assert [r.status for r in fake.for_model("plain-b")] == [429, 503, 200]
    assert resp.raw["retries"] == 2
    assert len(sleeps) == 2 and sleeps[1] > sleeps[0] > 0


def test_a_400_is_not_retried_and_the_failure_is_recorded(fake, direct, run_id):
    fake.script("plain-c", {"status": 400})
    with pytest.raises(LlmError, match="plain-c"):
        ask(LlmRequest(messages=MESSAGES, model="openai/plain-c", parameters=direct, run_id=run_id))
    assert len(fake.for_model("plain-c")) == 1
    from flows.store import visits as visit_store

    [row] = visit_store.llm_calls_for_run(run_id)
    assert row.error and row.response is None


def test_failover_retries_the_first_model_then_uses_the_next(fake, make_env, run_id, sleeps):
    env = make_env("failing_first", ["fo-a", "fo-b"], retries=2)
    fake.script("fo-a", {"status": 429}, {"status": 500}, {"status": 429})
    resp = ask(LlmRequest(messages=MESSAGES, model="failing_first", run_id=run_id), environments={env.name: env})
    assert [(r.model, r.status) for r in fake.requests] == [("fo-a", 429), ("fo-a", 500), ("fo-a", 429), ("fo-b", 200)]
    assert resp.model == "openai/fo-b"
    assert resp.raw["environment"] == "failing_first" and resp.raw["deployment"] == "fo-b"
    assert resp.raw["fallbacks"] == 1 and resp.raw["retries"] == 0
    assert len(sleeps) == 2  # backed off between the attempts of fo-a, not before failing over
    from flows.store import visits as visit_store

    rows = visit_store.llm_calls_for_run(run_id)  # every HTTP attempt, the failed ones too
    assert [r.model for r in rows] == ["openai/fo-a"] * 3 + ["openai/fo-b"]
    assert "attempt 1 of 3" in rows[0].error and "attempt 2 of 3" in rows[1].error
    assert "rate limited" in rows[2].error and "failing over to `fo-b`" in rows[2].error
    assert rows[3].error is None and rows[3].response["environment"] == "failing_first"


def test_a_model_that_failed_over_is_tried_last_until_its_cooldown_ends(fake, make_env, monkeypatch):
    from flows.llm import environments

    env = make_env("cooling", ["cd-a", "cd-b"], retries=0)
    fake.script("cd-a", {"status": 503})
    first = ask(LlmRequest(messages=MESSAGES, model="cooling"), environments={env.name: env})
    assert first.raw["deployment"] == "cd-b" and first.raw["fallbacks"] == 1
    again = ask(LlmRequest(messages=MESSAGES, model="cooling"), environments={env.name: env})
    # cd-a is cooling down: the call goes to cd-b first, and cd-a is not asked
    assert again.raw["deployment"] == "cd-b" and again.raw["fallbacks"] == 0
    assert [r.model for r in fake.requests] == ["cd-a", "cd-b", "cd-b"]
    fake.script("cd-b", {"status": 503})  # while cd-a cools down, it is still the one after cd-b
    third = ask(LlmRequest(messages=MESSAGES, model="cooling"), environments={env.name: env})
    assert third.raw["deployment"] == "cd-a" and third.raw["fallbacks"] == 1
    monkeypatch.setattr(environments, "_cooling", {})  # both cooldowns over
    assert ask(LlmRequest(messages=MESSAGES, model="cooling"), environments={env.name: env}).raw["deployment"] == "cd-a"


def test_a_failover_environment_fails_with_its_last_models_fault_and_a_400_is_not_retried(fake, make_env, run_id,
                                                                                           sleeps):
    env = make_env("all_down", ["dn-a", "dn-b"], retries=1)
    fake.script("dn-a", {"status": 400})
    fake.script("dn-b", {"status": 503}, {"status": 503})
    with pytest.raises(LlmError, match="`all_down` failed: server error"):
        ask(LlmRequest(messages=MESSAGES, model="all_down", run_id=run_id), environments={env.name: env})
    assert [(r.model, r.status) for r in fake.requests] == [("dn-a", 400), ("dn-b", 503), ("dn-b", 503)]
    from flows.store import visits as visit_store

    errors = [r.error for r in visit_store.llm_calls_for_run(run_id)]
    assert len(errors) == 3 and "refused (HTTP 400)" in errors[0] and "failing over to `dn-b`" in errors[0]
    assert "attempt 1 of 2" in errors[1] and "server error" in errors[2]


def test_environment_prices_unpriced_models(fake, make_env, run_id):
    env = make_env("priced", [{"model": "openai/priced-a", "input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6}])
    resp = ask(LlmRequest(messages=MESSAGES, model="priced", run_id=run_id), environments={"priced": env})
    assert resp.cost_usd == pytest.approx(resp.tokens_in * 1e-6 + resp.tokens_out * 2e-6)
    from flows.store import runs as run_store

    assert run_store.get_run(run_id).cost_usd == pytest.approx(resp.cost_usd)


def test_a_one_model_environment_retries_with_its_own_settings_and_records_every_attempt(fake, make_env, run_id,
                                                                                          sleeps):
    """No Router for one model: the environment's retries and timeout, the entry's parameters
    under the request's, its price, and every attempt in the call log."""
    env = make_env("solo", [{"model": "openai/solo-a", "name": "solo-a", "parameters": {"temperature": 0.3},
                             "input_cost_per_token": 1e-6, "output_cost_per_token": 0}], retries=1,
                   timeout_seconds=7)
    fake.script("solo-a", {"status": 503})
    resp = ask(LlmRequest(messages=MESSAGES, model="solo", run_id=run_id, parameters={"max_tokens": 20}),
               environments={env.name: env})
    assert [r.status for r in fake.for_model("solo-a")] == [503, 200] and len(sleeps) == 1
    sent = fake.for_model("solo-a")[-1].body
    assert sent["temperature"] == 0.3 and sent["max_tokens"] == 20
    assert resp.raw["environment"] == "solo" and resp.raw["deployment"] == "solo-a" and resp.raw["retries"] == 1
    assert resp.cost_usd == pytest.approx(resp.tokens_in * 1e-6) and resp.raw["cost_source"] == "environment"
    from flows.store import visits as visit_store

    rows = visit_store.llm_calls_for_run(run_id)
    assert [bool(r.error) for r in rows] == [True, False] and "attempt 1 of 2" in rows[0].error

    fake.script("solo-a", {"status": 503}, {"status": 503})
    with pytest.raises(LlmError, match="`solo` failed: server error"):  # retries: 1 means two attempts, then the failure
        ask(LlmRequest(messages=MESSAGES, model="solo", run_id=run_id), environments={env.name: env})
    assert [r.status for r in fake.for_model("solo-a")][2:] == [503, 503]


def test_load_balance_spreads_by_weight(fake, make_env):
    env = make_env("balanced", [{"model": "openai/lb-a", "weight": 1}, {"model": "openai/lb-b", "weight": 1}],
                   strategy="load_balance")

    async def many():
        for i in range(12):
            await complete(LlmRequest(messages=[{"role": "user", "content": f"q{i}"}], model="balanced"),
                           environments={"balanced": env})

    asyncio.run(many())
    served = {r.model for r in fake.requests}
    assert served == {"lb-a", "lb-b"}


def test_secrets_stay_out_of_prompts_records_and_errors(fake, make_env, run_id, monkeypatch):
    from flows import secrets
    from flows.secrets.keys import generate_key

    secret = "sk-very-secret-value-123"
    monkeypatch.setenv("ERGON_SECRET_KEYS", f"k1:{generate_key()}")
    secrets.set_secret("fake_key", secret)
    env = make_env("with_secret", [{"model": "openai/sec-a", "api_key": "secret:fake_key"}])
    ask(LlmRequest(messages=MESSAGES, model="with_secret", run_id=run_id), environments={env.name: env})
    fake.script("sec-a", {"status": 401})
    with pytest.raises(LlmError) as failure:
        ask(LlmRequest(messages=MESSAGES, model="with_secret", run_id=run_id), environments={env.name: env})
    # the key is sent only as the provider's auth header
    assert all(secret not in r.text for r in fake.requests)
    assert fake.requests[0].headers.get("authorization") == f"Bearer {secret}"
    from flows.store import visits as visit_store

    stored = json.dumps([row.model_dump(mode="json") for row in visit_store.llm_calls_for_run(run_id)])
    assert secret not in stored and secret not in str(failure.value)


def test_a_missing_key_reference_fails_naming_the_reference_only(make_env, store, monkeypatch):
    env = make_env("no_key", [{"model": "openai/nk-a", "api_key": "secret:absent"}])
    with pytest.raises(LlmError, match=r"secret `absent` is not set; store it with `ergon secrets set absent`"):
        ask(LlmRequest(messages=MESSAGES, model="no_key"), environments={env.name: env})
    env = make_env("no_var", [{"model": "openai/nk-b", "api_key": "env:ERGON_TEST_ABSENT_VAR"}])
    monkeypatch.delenv("ERGON_TEST_ABSENT_VAR", raising=False)
    with pytest.raises(LlmError, match="env:ERGON_TEST_ABSENT_VAR is not set"):
        ask(LlmRequest(messages=MESSAGES, model="no_var"), environments={env.name: env})


def test_json_schema_mode_when_litellm_says_the_model_supports_it(fake, direct):
    from flows.llm._litellm import litellm

    litellm().register_model({"openai/schema-capable": {
        "litellm_provider": "openai", "mode": "chat", "supports_response_schema": True,
        "input_cost_per_token": 1e-7, "output_cost_per_token": 1e-7}})
    schema = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"],
              "additionalProperties": False}
    resp = ask(LlmRequest(messages=MESSAGES, model="openai/schema-capable", parameters=direct, response_schema=schema))
    body = fake.requests[-1].body
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["strict"] is True
    assert json.loads(resp.content)["answer"] and resp.raw["structured_mode"] == "json_schema"
    assert resp.cost_usd > 0 and resp.raw["cost_source"] == "litellm"


def test_instructions_when_the_model_has_no_schema_mode(fake, direct):
    schema = {"type": "object", "properties": {"answer": {"type": "string"}}}
    resp = ask(LlmRequest(messages=MESSAGES, model="openai/plain-d", parameters=direct, response_schema=schema))
    body = fake.requests[-1].body
    assert "response_format" not in body
    assert '"answer"' in body["messages"][0]["content"] and body["messages"][0]["role"] == "system"
    assert resp.raw["structured_mode"] == "instructions"


def test_tool_calls_come_back_parsed(fake, direct):
    tools = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]
    fake.script("plain-t", {"tool_calls": [{"name": "lookup", "arguments": {"q": "acme"}}]})
    resp = ask(LlmRequest(messages=MESSAGES, model="openai/plain-t", parameters=direct, tools=tools))
    assert [(c.name, c.arguments) for c in resp.tool_calls] == [("lookup", {"q": "acme"})]
    assert fake.requests[-1].body["tools"] == tools
