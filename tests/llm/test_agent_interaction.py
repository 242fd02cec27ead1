"""An agent node's `interaction:` picks the prompts it gets, and the built-in `sys:` interactions
run: end to end against the fake OpenAI-compatible server, asserting what reached the model."""

from __future__ import annotations

import json

import pytest
from fake_openai import ENVIRONMENT as ENV  # the fake server's environment definition

pytestmark = pytest.mark.prefect


REVIEWER = """
kind: interaction
name: Reviewer
parameters: {temperature: 0.3}
prompts:
  - {role: system, template: "You are a strict reviewer of {{ topic }}."}
  - {role: user, template: "Focus on {{ focus }} only."}
"""

PROCESS = """
format_version: 1
process: {name}
initial: review
context:
  schema:
    type: object
    properties:
      topic: {{type: string}}
      score: {{type: integer}}
    required: [topic]
nodes:
  review:
    type: agent
    environment: fake
    interaction: {interaction}
    input: {{focus: "security of {{{{ topic }}}}"}}
    prompt: "Score {{{{ topic }}}}."
    writes: [score]
    transitions: [{{to: done}}]
  done: {{type: final}}
"""


def _messages(fake, model: str) -> list[dict]:
    return fake.for_model(model)[0].body["messages"]


def test_agent_interaction_prompts_reach_the_model(run_def, fake):
    fake.script("agi1", {"json": {"score": 4}})
    result = run_def({"env.yaml": ENV.format(model="agi1", url=fake.url), "reviewer.yaml": REVIEWER,
                      "p.yaml": PROCESS.format(name="reviewed", interaction="Reviewer")}, "reviewed", {"topic": "tls"})
    assert result["status"] == "completed" and result["context"]["score"] == 4, result
    sent = _messages(fake, "agi1")
    assert {"role": "system", "content": "You are a strict reviewer of tls."} in sent
    assert {"role": "user", "content": "Focus on security of tls only."} in sent
    # alongside the engine's contract: its system message first, the context and schema last
    assert "worker agent inside the business process `reviewed`" in sent[0]["content"]
    assert "BEGIN CONTEXT" in sent[-1]["content"] and "Score tls." in sent[-1]["content"]
    assert fake.for_model("agi1")[0].body["temperature"] == 0.3, "the interaction's parameters too"


def test_sys_general_agent_on_an_agent_node(run_def, fake):
    from compiler.builtin_interactions import BUILTIN

    fake.script("agi2", {"json": {"score": 2}})
    result = run_def({"env.yaml": ENV.format(model="agi2", url=fake.url),
                      "p.yaml": PROCESS.format(name="general", interaction="sys:GeneralAgent")}, "general", {"topic": "x"})
    assert result["status"] == "completed", result
    general = BUILTIN["sys:GeneralAgent"].prompts[0].template
    assert {"role": "system", "content": general} in _messages(fake, "agi2")


def test_sys_general_agent_on_an_interaction_node(run_def, fake):
    process = """
format_version: 1
process: general_call
initial: ask
context:
  schema:
    type: object
    properties:
      topic: {type: string}
      answer: {type: string}
    required: [topic]
nodes:
  ask:
    type: interaction
    interaction: sys:GeneralAgent
    environment: fake
    input: {prompt: "Explain {{ topic }} in one line."}
    writes: [answer]
    transitions: [{to: done}]
  done: {type: final}
"""
    fake.script("agi3", {"json": {"answer": "a protocol"}})
    result = run_def({"env.yaml": ENV.format(model="agi3", url=fake.url), "p.yaml": process}, "general_call",
                     {"topic": "tls"})
    assert result["status"] == "completed" and result["context"]["answer"] == "a protocol", result
    assert "Explain tls in one line." in json.dumps(_messages(fake, "agi3"))
