"""The `references` pass: interactions, tools, sub-processes and environments exist."""

from __future__ import annotations

from checking import brief, diagnostics

REFERENCE_CODES = {"unknown-interaction", "unknown-tool", "unknown-process", "unknown-environment", "missing-field"}

INTERACTION = """\
kind: interaction
name: ClassifyLine
environment: fast
prompts: [{role: user, template: Classify.}]
"""
ENVIRONMENT = """\
kind: environment
name: fast
models: [{model: openai/gpt-4o-mini}]
"""
CHILD = """\
format_version: 1
process: invoice_review
initial: done
nodes:
  done: {type: final}
"""
PIPELINE = """\
kind: pipeline
name: report
nodes:
  a: {type: tool, tool: noop}
"""


def refs(text: str, *, tools: tuple[str, ...] = (), others: dict[str, str] | None = None) -> list:
    """Diagnostics of this pass's codes in ``p.yaml``, beside the given other definitions."""
    return diagnostics(text, REFERENCE_CODES, tools=tools, others=others)


LIBRARY = {"i.yaml": INTERACTION, "e.yaml": ENVIRONMENT, "c.yaml": CHILD, "r.yaml": PIPELINE}

HEAD = """\
format_version: 1
process: p
initial: start
nodes:
"""  # nodes start on line 5


def test_names_that_exist_resolve():
    text = HEAD + """\
  start:
    type: interaction
    interaction: ClassifyLine
    environment: fast
    transitions: [{to: agent}]
  agent:
    type: agent
    interaction: sys:ProcessAgentNode
    tools: [+fetch_document, -think, lookup_vendor]
    transitions: [{to: child, trigger: agent}]
  child:
    type: process
    process: invoice_review
    transitions: [{to: pipe}]
  pipe:
    type: process
    process: report
    transitions: [{to: inline}]
  inline:
    type: process
    process: "tmp:child"
    process_definition: {format_version: 1, process: tmp_child, initial: done, nodes: {done: {type: final}}}
    transitions: [{to: done}]
  done: {type: final}
"""
    assert refs(text, tools=("lookup_vendor",), others=LIBRARY) == []


def test_unknown_interaction_on_interaction_and_agent_nodes():
    text = HEAD + """\
  start:
    type: interaction
    interaction: ClasifyLine
    transitions: [{to: agent}]
  agent:
    type: agent
    interaction: sys:GeneralAgnet
    transitions: [{to: done, trigger: agent}]
  done: {type: final}
"""
    diags = refs(text, others=LIBRARY)
    assert brief(diags) == [("unknown-interaction", 7, 18), ("unknown-interaction", 11, 18)]
    assert [d.hint for d in diags] == ["did you mean `ClassifyLine`?", "did you mean `sys:GeneralAgent`?"]


def test_unknown_tools_on_tool_and_agent_nodes():
    text = HEAD + """\
  start:
    type: tool
    tool: fetch_documnet
    transitions: [{to: agent}]
  agent:
    type: agent
    tools: [+serch_documents, -no_such_tool, set_context]
    transitions: [{to: done, trigger: agent}]
  done: {type: final}
"""
    diags = refs(text)
    # `set_context` is a known tool; giving it to an agent is the authoring pass's `control-tool`
    assert brief(diags) == [("unknown-tool", 7, 11), ("unknown-tool", 11, 13), ("unknown-tool", 11, 31)]
    assert diags[0].hint.startswith("did you mean `fetch_document`?")
    assert diags[1].hint.startswith("did you mean `search_documents`?")
    assert diags[2].hint.startswith("tools are: `add_to_collection`, `analyzeSentiment`, `analyze_conversation`, `ask_user`")
    from compiler.tools import BUILTIN_TOOLS

    assert f"and {len(BUILTIN_TOOLS) - 8} more" in diags[2].hint  # long lists are cut short (8 shown)


def test_tools_given_to_the_workspace_are_known():
    text = HEAD + """\
  start: {type: tool, tool: lookup_vendor, transitions: [{to: done}]}
  done: {type: final}
"""
    assert refs(text) != []
    assert refs(text, tools=("lookup_vendor",)) == []


def test_unknown_process_and_missing_process():
    text = HEAD + """\
  start:
    type: process
    process: invoice_reviw
    transitions: [{to: other}]
  other:
    type: process
    transitions: [{to: done}]
  done: {type: final}
"""
    diags = refs(text, others=LIBRARY)
    assert brief(diags) == [("unknown-process", 7, 14), ("missing-field", 9, 3)]
    assert diags[0].hint == "did you mean `invoice_review`?"
    assert "process_definition" in diags[1].message


def test_interactions_do_not_count_as_processes():
    text = HEAD + """\
  start: {type: process, process: ClassifyLine, transitions: [{to: done}]}
  done: {type: final}
"""
    diags = refs(text, others=LIBRARY)
    assert brief(diags) == [("unknown-process", 5, 35)]


def test_unknown_environment_on_process_node_and_interaction():
    text = """\
    format_version: 1
    process: p
    environment: fsat
    initial: start
    nodes:
      start: {type: agent, environment: slow, transitions: [{to: done, trigger: agent}]}
      done: {type: final}
    """
    diags = refs(text, others={"e.yaml": ENVIRONMENT})
    assert brief(diags) == [("unknown-environment", 3, 14), ("unknown-environment", 6, 37)]
    assert diags[0].hint == "did you mean `fast`?"
    assert diags[1].hint == "environments are: `fast`"
    interaction = INTERACTION.replace("environment: fast", "environment: nowhere")
    diags = refs(interaction)
    assert brief(diags) == [("unknown-environment", 3, 14)]
    assert diags[0].hint == "there are no environments"


def test_pipeline_environment():
    text = "kind: pipeline\nname: pipe\nenvironment: fsat\nnodes:\n  a: {type: tool, tool: noop}\n"
    diags = refs(text, others={"e.yaml": ENVIRONMENT})
    assert brief(diags) == [("unknown-environment", 3, 14)]


def test_nested_children_and_inline_definitions_are_resolved():
    text = HEAD + """\
  start:
    type: foreach
    foreach: lines
    node: {type: interaction, interaction: ClasifyLine}
    transitions: [{to: fan}]
  fan:
    type: branch
    branches:
      - id: a
        node:
          type: process
          process_definition:
            format_version: 1
            process: inner
            initial: call
            nodes:
              call: {type: tool, tool: nope, transitions: [{to: done}]}
              done: {type: final}
    transitions: [{to: done}]
  done: {type: final}
"""
    diags = refs(text, others=LIBRARY)
    assert brief(diags) == [("unknown-interaction", 8, 44), ("unknown-tool", 21, 40)]
    assert diags[0].path == "nodes.start.node.interaction"
    assert diags[1].path == "nodes.fan.branches[0].node.process_definition.nodes.call.tool"


def test_sys_interactions_the_checker_knows_and_the_ones_it_refuses():
    text = HEAD + """\
  start:
    type: interaction
    interaction: sys:GeneralAgent
    input: {prompt: Hello.}
    transitions: [{to: agent}]
  agent:
    type: agent
    interaction: sys:GeneralAgent
    input: {focus: dates}
    transitions: [{to: explain}]
  explain:
    type: interaction
    interaction: sys:ExplainProcess
    transitions: [{to: contract}]
  contract:
    type: interaction
    interaction: sys:ProcessAgentNode
    transitions: [{to: plain}]
  plain:
    type: agent
    input: {focus: dates}
    transitions: [{to: done}]
  done: {type: final}
"""
    diags = diagnostics(text, REFERENCE_CODES | {"agent-only-interaction", "unused-agent-input"}, others=LIBRARY)
    assert brief(diags) == [("unknown-interaction", 17, 18), ("agent-only-interaction", 21, 18),
                            ("unused-agent-input", 25, 5)]
    assert "`sys:GeneralAgent`, `sys:ProcessAgentNode` (agent nodes)" in diags[0].hint


def test_every_builtin_interaction_is_a_valid_definition():
    from compiler.builtin_interactions import BUILTIN
    from compiler.tools import BUILTIN_INTERACTIONS

    assert set(BUILTIN) == BUILTIN_INTERACTIONS
    assert all(name == defn.name and name.startswith("sys:") for name, defn in BUILTIN.items())
