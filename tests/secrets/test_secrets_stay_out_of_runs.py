"""A real run whose model key is an encrypted secret: the key reaches the provider as its auth
header and nowhere else — not the prompt, not the LLM-call or tool-call records, not any byte of
the store's database file."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "llm"))

from fake_openai import FakeOpenAI

pytestmark = pytest.mark.prefect

KEY = "sk-proj-4c8e1f-secret-backed-marker"

ENV = """
kind: environment
name: guarded
models:
  - {{model: openai/leakcheck, api_base: "{url}", api_key: "secret:OPENAI_KEY"}}
"""

PROCESS = """
format_version: 1
process: leak_check
initial: score
context:
  schema:
    type: object
    properties:
      topic: {type: string}
      score: {type: integer}
    required: [topic]
nodes:
  score:
    type: agent
    environment: guarded
    prompt: "Score {{ topic }} with the increment tool."
    tools: [increment]
    writes: [score]
    transitions: [{to: done}]
  done: {type: final}
"""


@pytest.fixture
def fake():
    server = FakeOpenAI().start()
    yield server
    server.stop()


def test_a_secret_backed_key_never_lands_in_the_store(run_def, keyed, fake, database_bytes):
    from flows import secrets
    from flows.store import export as export_store
    from flows.store import visits as visit_store

    secrets.set_secret("OPENAI_KEY", KEY)
    fake.script("leakcheck",
                {"tool_calls": [{"name": "increment", "arguments": {"value": 1}}]},
                {"json": {"score": 2}})
    result = run_def({"env.yaml": ENV.format(url=fake.url), "leak_check.yaml": PROCESS}, "leak_check", {"topic": "x"})
    assert result["status"] == "completed", result
    requests = fake.for_model("leakcheck")
    assert len(requests) == 2
    assert all(r.headers.get("authorization") == f"Bearer {KEY}" for r in requests), "the key was used"
    assert all(KEY not in r.text for r in requests), "the key is never in what the model reads"
    calls = visit_store.llm_calls_for_run(result["run_id"])
    tools = visit_store.tool_calls_for_run(result["run_id"])
    assert calls and tools
    records = json.dumps([row.model_dump(mode="json") for row in [*calls, *tools]])
    assert KEY not in records
    assert KEY not in json.dumps(export_store.export_run(result["run_id"]), default=str)
    raw = database_bytes()
    assert KEY.encode() not in raw and KEY[8:].encode() not in raw


ECHO = """
format_version: 1
process: echo_check
initial: summarize
context:
  schema:
    type: object
    properties:
      topic: {type: string}
      summary: {type: string}
    required: [topic]
nodes:
  summarize:
    type: agent
    environment: guarded
    prompt: "Summarize {{ topic }}."
    writes: [summary]
    transitions: [{to: use}]
  use: {type: tool, tool: log, input: {message: "{{ summary }}"}, transitions: [{to: done}]}
  done: {type: final}
"""


def test_a_secret_the_model_echoes_back_is_redacted_everywhere(run_def, keyed, fake, database_bytes):
    """The model answers with the key in its text: the context, its diffs, the LLM-call record,
    the next node's input and every byte of the store hold `***` instead."""
    from flows import secrets
    from flows.store import export as export_store
    from flows.store import visits as visit_store

    secrets.set_secret("OPENAI_KEY", KEY)
    fake.script("leakcheck", {"json": {"summary": f"the key is {KEY}, as asked"}})
    result = run_def({"env.yaml": ENV.format(url=fake.url), "echo_check.yaml": ECHO}, "echo_check", {"topic": "x"})
    assert result["status"] == "completed", result
    assert result["context"]["summary"] == "the key is ***, as asked"
    assert KEY not in json.dumps(export_store.export_run(result["run_id"]), default=str)
    calls = visit_store.llm_calls_for_run(result["run_id"])
    assert calls and all(KEY not in json.dumps(row.model_dump(mode="json")) for row in calls)
    raw = database_bytes()
    assert KEY.encode() not in raw and KEY[8:].encode() not in raw
