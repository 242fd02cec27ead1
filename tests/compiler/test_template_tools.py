"""A template step's ``tools_allowed``: the seed's "empty = all tools allowed" — every tool an
agent may be given, the project's own included — and a list of names restricts the step to them."""

from __future__ import annotations

from pathlib import Path

from compiler import build_plan, workspace_from_texts
from compiler.tools import PROCESS_CONTROL_TOOLS

FORMS = {p.name: p.read_text() for p in (Path(__file__).parents[2] / "definitions" / "forms").glob("*.yaml")}

TEMPLATE = """\
kind: template
name: summary_tools
input_form: contract_input
steps:
  - key: open
    prompt: "Summarize {{ input.document.document_text }}"
    tools_allowed: []
    output_key: summary
    output_form: summary_output
  - key: narrow
    parent: open
    prompt: "Shorten {{ summary }}"
    tools_allowed: [think, lookup_vendor]
    output_key: shorter
    output_form: summary_output
"""


def _agent_tools() -> dict[str, list[str]]:
    ws = workspace_from_texts({**FORMS, "t.yaml": TEMPLATE}, tools=["lookup_vendor"])
    unit = ws.named("template")["summary_tools"]
    plan = build_plan(unit, ws)
    return {nid: node.agent_tools or [] for nid, node in plan.nodes.items()}


def test_an_empty_tools_allowed_gives_the_step_every_tool_an_agent_may_have():
    tools = _agent_tools()["open"]
    for name in ("fetch_document", "search_documents", "http_request", "write_artifact", "think", "lookup_vendor",
                 "launch_workstream"):
        assert name in tools, name
    assert not set(tools) & PROCESS_CONTROL_TOOLS, "supervisors' tools never reach a worker"
    assert "createDocument" not in tools and "ask_user" not in tools


def test_a_tools_allowed_list_is_what_the_step_gets():
    assert _agent_tools()["narrow"] == ["think", "lookup_vendor"]
