"""What the workstream tests share: the environment and process they run, and reading a request."""

from __future__ import annotations

ENV = """
kind: environment
name: {name}
models:
  - {{model: openai/{model}, api_base: "{url}", api_key: "env:FAKE_OPENAI_KEY"}}
"""

DELEGATING = """
format_version: 1
process: delegating
initial: lead
context:
  schema: {type: object, properties: {report: {type: string}}}
nodes:
  lead:
    type: agent
    environment: lead
    max_iterations: 60
    prompt: "Find the answer and take your time over the rest, in parallel; then report."
    tools: [think, sleep, launch_workstream, check_workstream, list_workstreams, get_workstream_result,
            terminate_workstream]
    writes: [report]
    transitions: [{to: done}]
  done: {type: final}
"""


def text_of(body: dict) -> str:
    """Every message's text of a request body, one after the other."""
    return "\n".join(str(m.get("content") or "") for m in body.get("messages", []))
