"""The catalog tools Ergon does not provide are refused by ``ergon check`` by name, with the
reason and what to use instead, wherever a definition can name a tool: an agent's ``tools``, a
tool node, a template step's ``tools_allowed`` and a workflow activity."""

from __future__ import annotations

import pytest

from compiler import check_workspace, workspace_from_texts
from compiler.tools import BUILTIN_TOOLS
from compiler.unavailable_tools import UNAVAILABLE_TOOLS


def _process(name: str) -> str:
    return f"""\
format_version: 1
process: p
initial: call
nodes:
  call: {{type: tool, tool: {name}, transitions: [{{to: research}}]}}
  research:
    type: agent
    tools: [+think, +{name}]
    transitions: [{{to: done, trigger: agent}}]
  done: {{type: final}}
"""


def _template(name: str) -> str:
    return f"""\
kind: template
name: t
input_form: intake
steps:
  - key: summarize
    prompt: "Summarize {{{{input}}}}"
    output_key: summary
    output_form: intake
    tools_allowed: [think, {name}]
"""


def _workflow(name: str) -> str:
    return f"""\
kind: workflow
name: w
steps:
  - name: {name}
    params: {{}}
"""


def _diagnostics(text: str, tools=()):
    ws = workspace_from_texts({"d.yaml": text}, tools=tools)
    return [d for d in check_workspace(ws).diagnostics if d.code == "unknown-tool"]


@pytest.mark.parametrize("name", sorted(UNAVAILABLE_TOOLS))
def test_each_refused_tool_is_named_with_its_reason_and_alternative_everywhere(name):
    entry = UNAVAILABLE_TOOLS[name]
    found = [*_diagnostics(_process(name)), *_diagnostics(_template(name)), *_diagnostics(_workflow(name))]
    # the tool node, the agent's tools, the template step's tools_allowed, the workflow activity
    assert [(d.line, d.col) for d in found] == [(5, 28), (8, 21), (9, 28), (4, 11)]
    for d in found:
        assert f"`{name}` is a built-in tool of the Vertesia catalog that Ergon does not provide" in d.message
        assert entry.why in d.message
        assert d.hint == f"instead, {entry.instead}"


def test_a_refused_tool_is_no_built_in_and_a_project_tool_of_its_name_is_accepted():
    assert not set(UNAVAILABLE_TOOLS) & set(BUILTIN_TOOLS)
    # a project's own `web_search` (a Python or manifest tool) is a tool like any other
    assert _diagnostics(_process("web_search"), tools=["web_search"]) == []
    assert _diagnostics(_workflow("web_search"), tools=["web_search"]) == []


def test_a_misspelt_name_still_gets_the_did_you_mean_hint():
    (d,) = _diagnostics(_workflow("web_serch"))
    assert d.message.startswith("no tool is named `web_serch`")
    assert "web_search" not in (d.hint or "")  # refused names are no registered tools to suggest


#: Every tool the seed's "Built-in Tools" page names (`**Name:**`), in the page's order.
CATALOG = (
    "think", "plan", "update_plan",
    "launch_workstream", "check_workstream", "list_workstreams", "terminate_workstream", "steer_workstream",
    "message_workstream", "get_workstream_result",
    "search_documents", "fetch_document", "create_document", "update_document", "create_content_object",
    "render_markdown", "render_docx", "inspect_pdf", "edit_artifact_docx", "merge_artifacts",
    "get_object_type", "create_or_update_object_type",
    "create_collection", "update_collection", "add_to_collection", "remove_from_collection", "get_collection",
    "search_collections",
    "write_artifact", "read_artifact", "list_artifacts", "grep_artifacts", "patch_artifact", "view_image",
    "web_search", "execute_shell", "ask_user", "analyze_image",
    "search_conversations", "analyze_conversation", "send_email",
    "schedule_workflow", "get_index_configuration", "update_index_configuration",
)


def test_every_tool_of_the_catalog_page_is_provided_or_refused_by_name():
    import flows.tools.builtins  # noqa: F401
    from flows.tools import REGISTRY

    assert len(CATALOG) == len(set(CATALOG)) == 44
    provided = [n for n in CATALOG if n in BUILTIN_TOOLS]
    refused = [n for n in CATALOG if n in UNAVAILABLE_TOOLS]
    assert not set(provided) & set(refused)
    assert set(provided) | set(refused) == set(CATALOG), "no catalog tool is left a bare unknown tool"
    assert set(provided) - {"ask_user"} <= set(REGISTRY)  # ask_user is the engine's (a human task)
    assert set(refused) == set(UNAVAILABLE_TOOLS)
    assert (len(provided), len(refused)) == (38, 6)


def test_the_checker_holds_catalog_tools_to_their_parameters():
    workflow = """\
kind: workflow
name: w
steps:
  - name: render_markdown
    params: {artifact_path: files/report.md, template_path: custom.tex}
  - name: inspect_pdf
    params: {document_id: doc-1}
  - name: merge_artifacts
    params: {paths: [a.md, b.md], output_path: out/all.md}
"""
    ws = workspace_from_texts({"d.yaml": workflow})
    found = [(d.code, d.line, d.message) for d in check_workspace(ws).diagnostics if d.code == "tool-params"]
    assert [(code, line) for code, line, _ in found] == [("tool-params", 5), ("tool-params", 7), ("tool-params", 7)]
    assert "has no parameter `template_path`" in found[0][2]
    assert sorted(m for _, _, m in found[1:]) == ["activity `inspect_pdf` has no parameter `document_id`",
                                                 "activity `inspect_pdf` needs the parameter `pdf_path`"]
