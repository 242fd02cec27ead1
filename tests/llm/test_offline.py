"""The offline model: deterministic, and valid against whatever schema it is asked for."""

from __future__ import annotations

import json

import jsonschema
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flows.llm.offline import SEED_ENV, complete_offline, example_for_schema
from flows.llm.types import LlmRequest

NAMES = st.sampled_from(["name", "summary", "risk_level", "items", "total", "due_date", "email", "tags"])


def _leaf():
    return st.one_of(
        st.just({"type": "string"}),
        st.builds(lambda lo, extra: {"type": "string", "minLength": lo, "maxLength": lo + extra},
                  st.integers(0, 30), st.integers(0, 10)),
        st.sampled_from([{"type": "string", "format": f} for f in ("date", "date-time", "email", "uri", "uuid")]),
        st.builds(lambda lo, span: {"type": "integer", "minimum": lo, "maximum": lo + span},
                  st.integers(-1000, 1000), st.integers(0, 50)),
        st.builds(lambda lo, span: {"type": "number", "exclusiveMinimum": lo, "exclusiveMaximum": lo + span},
                  st.integers(-100, 100), st.integers(1, 10)),
        st.builds(lambda m: {"type": "integer", "minimum": 1, "multipleOf": m}, st.integers(1, 7)),
        st.just({"type": "boolean"}),
        st.just({"type": "null"}),
        st.lists(st.one_of(st.text(max_size=5), st.integers()), min_size=1, max_size=4, unique=True).map(lambda v: {"enum": v}),
        st.one_of(st.text(max_size=5), st.integers(), st.booleans()).map(lambda v: {"const": v}),
        st.just({"type": ["string", "null"]}),
    )


def _extend(children):
    return st.one_of(
        st.builds(lambda item, lo: {"type": "array", "items": item, "minItems": lo}, children, st.integers(0, 3)),
        st.builds(lambda item: {"type": "array", "items": item, "minItems": 2, "uniqueItems": True},
                  st.one_of(st.just({"type": "string"}), st.builds(lambda lo: {"type": "integer", "minimum": lo}, st.integers(-5, 5)),
                            st.just({"enum": ["a", "b", "c"]}))),
        st.dictionaries(NAMES, children, max_size=4).flatmap(lambda props: st.builds(
            lambda required, closed: {"type": "object", "properties": props, "required": required,
                                      **({"additionalProperties": False} if closed else {})},
            st.lists(st.sampled_from(sorted(props)), unique=True) if props else st.just([]), st.booleans())),
        st.lists(children, min_size=1, max_size=3).map(lambda bs: {"anyOf": bs}),
        st.tuples(st.just({"type": "string"}), st.just({"type": "integer"})).map(lambda bs: {"oneOf": list(bs)}),
    )


SCHEMAS = st.recursive(_leaf(), _extend, max_leaves=12)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schema=SCHEMAS, seed=st.text(max_size=8), spread=st.booleans())
def test_offline_output_validates_against_random_schemas(schema, seed, spread):
    value = example_for_schema(schema, seed=seed, spread=spread)
    jsonschema.validate(value, schema, format_checker=jsonschema.FormatChecker())


ROUTE = {"type": "object", "properties": {"_next_node": {"enum": ["legal_review", "approve", "reject"]},
                                          "total": {"type": "number"}},
         "required": ["_next_node", "total"], "additionalProperties": False}


def _answer(monkeypatch, seed: str | None) -> dict:
    if seed is None:
        monkeypatch.delenv(SEED_ENV, raising=False)
    else:
        monkeypatch.setenv(SEED_ENV, seed)
    req = LlmRequest(messages=[{"role": "user", "content": "route the contract"}], response_schema=ROUTE)
    return json.loads(complete_offline(req).content or "")


def test_the_seed_variable_varies_choices_and_magnitudes_deterministically(monkeypatch):
    unseeded = _answer(monkeypatch, None)
    assert _answer(monkeypatch, "") == unseeded, "an empty seed is no seed"
    answers = {seed: _answer(monkeypatch, seed) for seed in map(str, range(40))}
    assert all(_answer(monkeypatch, seed) == a for seed, a in list(answers.items())[:5]), "deterministic per seed"
    for a in answers.values():
        jsonschema.validate(a, ROUTE)
    assert {a["_next_node"] for a in answers.values()} == {"legal_review", "approve", "reject"}
    totals = [a["total"] for a in answers.values()]
    assert min(totals) < 1 and max(totals) > 10_000, "unbounded numbers spread over magnitudes"
    assert 1 <= unseeded["total"] <= 100, "without the seed: the answers of before"


def test_deterministic_and_labelled():
    schema = {"type": "object", "properties": {"summary": {"type": "string"}, "risk": {"enum": ["low", "high"]}},
              "required": ["summary", "risk"], "additionalProperties": False}
    req = LlmRequest(messages=[{"role": "user", "content": "assess Acme"}], response_schema=schema)
    first, second = complete_offline(req), complete_offline(req)
    assert first.content == second.content and first.offline and first.model == "ergon/offline"
    assert first.cost_usd == 0 and first.tokens_in > 0 and first.tokens_out > 0
    assert '"summary": "summary (offline)"' in first.content


def test_refs_and_realistic_values():
    schema = {"$defs": {"party": {"type": "object", "properties": {"email": {"type": "string", "format": "email"}},
                                  "required": ["email"]}},
              "type": "object", "properties": {"buyer": {"$ref": "#/$defs/party"},
                                               "signed_on": {"type": "string", "format": "date"}},
              "required": ["buyer", "signed_on"]}
    value = example_for_schema(schema, seed="x")
    jsonschema.validate(value, schema)
    assert value["buyer"]["email"].endswith("@example.com") and value["signed_on"].startswith("2026-")


def test_with_tools_and_no_schema_it_answers_instead_of_calling():
    tools = [{"type": "function", "function": {"name": "fetch", "parameters": {"type": "object"}}}]
    resp = complete_offline(LlmRequest(messages=[{"role": "user", "content": "look it up"}], tools=tools))
    assert resp.tool_calls == [] and resp.content
