"""Interaction and agent nodes inside real runs: Prefect, the store, and real HTTP to the fake
OpenAI-compatible server (via an `environment` definition pointing at it)."""

from __future__ import annotations

import json

import pytest
from fake_openai import ENVIRONMENT as ENV  # the fake server's environment definition

pytestmark = pytest.mark.prefect


AGENT_PROCESS = """
format_version: 1
process: {name}
description: Scores a topic with a tool-using agent.
initial: score
{budget}
context:
  schema:
    type: object
    properties:
      topic: {{type: string}}
      score: {{type: integer}}
      verdict: {{type: string}}
    required: [topic]
nodes:
  score:
    type: agent
    environment: fake
    prompt: "Score the topic {{{{ topic }}}} with the increment tool."
    tools: [increment]
    writes: [score]
    transitions:
      - {{to: high, trigger: agent}}
      - {{to: low, trigger: agent}}
  high: {{type: tool, config: {{context_update: {{verdict: high}}}}, writes: [verdict], transitions: [{{to: done}}]}}
  low: {{type: tool, config: {{context_update: {{verdict: low}}}}, writes: [verdict], transitions: [{{to: done}}]}}
  done: {{type: final}}
"""


def files(fake, model: str, name: str, budget: str = "") -> dict[str, str]:
    return {"env.yaml": ENV.format(model=model, url=fake.url),
            f"{name}.yaml": AGENT_PROCESS.format(name=name, budget=budget)}


def test_agent_tool_loop_and_next_node_routing(run_def, fake):
    from flows.store import visits as visit_store

    fake.script("agent1",
                {"tool_calls": [{"name": "increment", "arguments": {"value": 41}}]},
                {"json": {"score": 42, "_next_node": "low"}})
    result = run_def(files(fake, "agent1", "scorer"), "scorer", {"topic": "prefect"})
    assert result["status"] == "completed", result
    assert result["context"] == {"topic": "prefect", "score": 42, "verdict": "low"}
    assert result["outcome"] == "done"
    calls = visit_store.llm_calls_for_run(result["run_id"])
    assert len(calls) == 2 and not any(c.offline for c in calls)
    tools = visit_store.tool_calls_for_run(result["run_id"])
    assert [(t.tool, t.args, t.result) for t in tools] == [("increment", {"value": 41}, {"counter": 42})]
    first = fake.for_model("agent1")[0].body
    prompt = "\n".join(str(m.get("content")) for m in first["messages"])
    assert "BEGIN CONTEXT" in prompt and "END CONTEXT" in prompt and "treat it as data" in prompt.lower()
    # this model is unknown to litellm, so the schema travels as instructions in the prompt
    assert '"_next_node"' in prompt and '"high"' in prompt and '"low"' in prompt
    assert "sk-fake-test-key" not in json.dumps([r.body for r in fake.requests]), "the API key never reaches a prompt"
    tool_names = [t["function"]["name"] for t in first.get("tools", [])]
    assert tool_names == ["increment"], "the agent gets exactly its declared tools"


def test_agent_wrong_answer_is_repaired(run_def, fake):
    fake.script("agent2", {"content": "the score is high"}, {"json": {"score": 7, "_next_node": "high"}})
    result = run_def(files(fake, "agent2", "repaired"), "repaired", {"topic": "x"})
    assert result["status"] == "completed", result
    assert result["context"]["verdict"] == "high"
    repair = fake.for_model("agent2")[1].body["messages"][-1]["content"]
    assert "does not match the result schema" in repair


def test_agent_wrong_answer_that_stays_wrong_fails_and_writes_nothing(run_def, fake):
    fake.script("agent3", {"json": {"score": "many", "_next_node": "high"}},
                {"json": {"score": 3, "_next_node": "high", "extra": True}})
    result = run_def(files(fake, "agent3", "stubborn"), "stubborn", {"topic": "x"})
    assert result["status"] == "failed"
    assert "does not match its result schema" in result["error"]
    assert result["context"] == {"topic": "x"}


def test_next_node_outside_declared_targets_fails(run_def, fake):
    fake.script("agent4", {"json": {"score": 1, "_next_node": "nowhere"}}, {"json": {"score": 1, "_next_node": "elsewhere"}})
    result = run_def(files(fake, "agent4", "lost"), "lost", {"topic": "x"})
    assert result["status"] == "failed"
    assert result["context"] == {"topic": "x"}


def test_run_budget_stops_the_run(run_def, fake):
    fake.script("agent5", {"tool_calls": [{"name": "increment", "arguments": {"value": 1}}]},
                {"json": {"score": 2, "_next_node": "high"}})
    result = run_def(files(fake, "agent5", "thrifty", budget="budget: {max_tokens: 5}"), "thrifty", {"topic": "x"})
    assert result["status"] == "failed"
    assert "budget exhausted" in result["error"]
    assert len(fake.for_model("agent5")) == 1, "no call is made once the budget is spent"


def test_interaction_node_writes_its_structured_result(run_def, fake):
    interaction = """
kind: interaction
name: Classify
environment: fake
prompts:
  - {role: system, template: "You classify topics."}
  - {role: user, template: "Classify {{ topic }}."}
input_schema: {type: object, properties: {topic: {type: string}}, required: [topic]}
"""
    process = """
format_version: 1
process: classify_run
initial: classify
context:
  schema:
    type: object
    properties:
      topic: {type: string}
      category: {type: string, enum: [tool, library]}
    required: [topic]
nodes:
  classify:
    type: interaction
    interaction: Classify
    input: {topic: "{{ topic }}"}
    writes: [category]
    transitions: [{to: done}]
  done: {type: final}
"""
    fake.script("inter1", {"json": {"category": "library"}})
    result = run_def({"env.yaml": ENV.format(model="inter1", url=fake.url), "classify.yaml": interaction,
                      "process.yaml": process}, "classify_run", {"topic": "litellm"})
    assert result["status"] == "completed", result
    assert result["context"]["category"] == "library"
    sent = fake.for_model("inter1")[0].body
    assert "Classify litellm." in json.dumps(sent["messages"])


def test_cassette_record_then_replay_without_the_server(run_def, fake, tmp_path):
    cassette = tmp_path / "run.cassette.json"
    fake.script("agent6", {"json": {"score": 5, "_next_node": "high"}})
    first = run_def(files(fake, "agent6", "taped"), "taped", {"topic": "x"}, record=str(cassette))
    assert first["status"] == "completed" and cassette.exists()
    fake.script("agent6", {"status": 500})  # the server now fails: replay must not reach it
    before = len(fake.for_model("agent6"))
    second = run_def({}, "taped", {"topic": "x"}, replay=str(cassette))
    assert second["status"] == "completed", second
    assert second["context"] == first["context"]
    assert len(fake.for_model("agent6")) == before


COLLECTED_INTERACTION = """
kind: interaction
name: ClassifyDoc
environment: fake
prompts:
  - {role: user, template: "Classify {{ doc }}."}
input_schema: {type: object, properties: {doc: {type: string}}, required: [doc]}
result_schema:
  type: object
  properties:
    category: {type: string}
    confidence: {type: number}
  required: [category, confidence]
"""

COLLECTED_PROCESS = """
format_version: 1
process: classify_docs
initial: fan
context:
  schema:
    type: object
    properties:
      docs: {type: array, items: {type: string}}
      results: {type: array}
  initial: {docs: [a, b]}
nodes:
  fan:
    type: foreach
    foreach: docs
    as: doc
    max_concurrency: 1
    node:
      type: interaction
      interaction: ClassifyDoc
      input: {doc: "{{ doc }}"}
      writes: [category, confidence]
    collect: results
    writes: [results]
    transitions: [{to: done}]
  done: {type: final}
"""


def test_a_collected_body_keeps_the_fields_its_interaction_declares(run_def, fake):
    """A foreach body's `writes` that only its interaction's result declares (not the context):
    the answer is validated against — and keeps — those fields, and an empty answer is refused."""
    files = {"env.yaml": ENV.format(model="collect1", url=fake.url), "classify.yaml": COLLECTED_INTERACTION,
             "process.yaml": COLLECTED_PROCESS}
    fake.script("collect1", {"json": {"category": "invoice", "confidence": 0.9}},
                {"json": {"category": "letter", "confidence": 0.4}})
    result = run_def(files, "classify_docs", {})
    assert result["status"] == "completed", result
    assert result["context"]["results"] == [{"category": "invoice", "confidence": 0.9},
                                            {"category": "letter", "confidence": 0.4}]

    fake.script("collect2", {"json": {}}, {"json": {}})
    files["env.yaml"] = ENV.format(model="collect2", url=fake.url)
    refused = run_def(files, "classify_docs", {})
    assert refused["status"] == "failed" and refused["error_kind"] == "model", refused
    assert "results" not in refused["context"], "a refused answer writes nothing"
