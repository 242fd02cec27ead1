"""The LLM fault matrix: every way a model endpoint can answer badly, for an interaction node and
an agent node in real runs. Each ends the run `failed` with the fault named in its error, and
leaves the context exactly as it was before the node."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.prefect

ENV = """
kind: environment
name: faulty
retries: 0
timeout_seconds: 1
models:
  - {{model: openai/{model}, api_base: "{url}", api_key: "env:FAKE_OPENAI_KEY"}}
"""
INTERACTION = """
kind: interaction
name: Classify
environment: faulty
prompts:
  - {role: user, template: "Classify {{ topic }}."}
input_schema: {type: object, properties: {topic: {type: string}}, required: [topic]}
"""
PROCESS = """
format_version: 1
process: {name}
initial: ask
context:
  schema:
    type: object
    properties:
      topic: {{type: string}}
      category: {{type: string, enum: [tool, library]}}
    required: [topic]
nodes:
  ask:
    {body}
    writes: [category]
    transitions:
      - {{to: done, trigger: {trigger}}}
      - {{to: other, trigger: {trigger}}}
  done: {{type: final}}
  other: {{type: final}}
"""
BODIES = {
    "interaction": ("type: interaction\n    interaction: Classify\n    input: {topic: \"{{ topic }}\"}", "auto"),
    "agent": ("type: agent\n    environment: faulty\n    prompt: \"Classify {{ topic }}.\"", "agent"),
}
FAULTS = {
    "invalid_json": ({"content": "category: library, not JSON {"}, "JSON"),
    "wrong_type": ({"json": {"category": 7, "_next_node": "done"}}, "category"),
    "not_in_enum": ({"json": {"category": "database", "_next_node": "done"}}, "category"),
    "missing_field": ({"json": {"_next_node": "done"}}, "category"),
    "bad_next_node": ({"json": {"category": "tool", "_next_node": "nowhere"}}, "nowhere"),
    "rate_limited": ({"status": 429}, "429"),
    "server_error": ({"status": 500}, "500"),
    "hang": ({"delay": 4}, "timed out"),
    "truncated_body": ({"body": '{"id": "chatcmpl-x", "choices": [{"ind'}, "not a JSON completion"),
    "html_body": ({"body": "<html><body>502 Bad Gateway</body></html>", "content_type": "text/html"},
                  "not a JSON completion"),
    "empty_choices": ({"choices": []}, "no choices"),
}


@pytest.mark.parametrize("kind", sorted(BODIES))
@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_a_bad_answer_fails_the_node_naming_the_fault_and_leaves_the_context(run_def, fake, kind, fault):
    behaviour, words = FAULTS[fault]
    if fault == "bad_next_node" and kind == "interaction":
        pytest.skip("an interaction node's exits are not the model's to pick")
    model = f"fault-{kind}-{fault}".replace("_", "-")
    fake.script(model, *[behaviour] * 6)  # the same fault on every repair turn
    body, trigger = BODIES[kind]
    name = f"fm_{kind}_{fault}"
    files = {"env.yaml": ENV.format(model=model, url=fake.url), "classify.yaml": INTERACTION,
             f"{name}.yaml": PROCESS.format(name=name, body=body, trigger=trigger)}
    result = run_def(files, name, {"topic": "litellm"})
    assert result["status"] == "failed", result
    assert result["context"] == {"topic": "litellm"}, "the failed node touched the context"
    assert words in (result["error"] or ""), result["error"]
    assert "Traceback" not in (result["error"] or "") and "IndexError" not in (result["error"] or "")
