"""The `authoring` pass: the seed's statically checkable authoring rules."""

from __future__ import annotations

from checking import brief, diagnostics
from compiler.passes.authoring import looks_like_schema

AUTHORING_CODES = {
    "input-is-schema", "document-field", "undeclared-write", "write-not-in-schema", "role-assignee",
    "fanout-child", "foreach-limit", "set-context-envelope", "skip-not-skippable", "control-tool",
    "context-too-large", "bad-schema", "bad-value",
}


def rules(text: str, *, file: str = "p.yaml") -> list:
    return diagnostics(text, AUTHORING_CODES, file=file)


HEAD = """\
format_version: 1
process: p
initial: start
context:
  schema:
    type: object
    properties:
      doc_id: {type: string, format: document, editor: document}
      lines: {type: array, items: {type: string}}
      results: {type: array}
      status: {type: string}
      decision: {type: string}
    required: [doc_id, lines]
  initial: {}
nodes:
"""  # nodes start on line 16


def test_valid_process_follows_every_rule():
    text = HEAD + """\
  start:
    type: interaction
    interaction: sys:GeneralAgent
    input: {doc: "{{doc_id}}", mode: {kind: fast}}
    writes: [status]
    transitions: [{to: each}]
  each:
    type: foreach
    foreach: lines
    as: line
    max_concurrency: 10
    node: {type: tool, tool: noop, input: {line: "{{line}}"}}
    collect: {into: results}
    writes: [results]
    transitions: [{to: mark}]
  mark:
    type: tool
    tool: set_context
    input: {updates: {decision: accepted}}
    writes: [decision]
    skippable: true
    metadata: {supervisor: {allow_skip: true}}
    transitions: [{to: done}]
  done: {type: final}
"""
    assert rules(text) == []


def test_looks_like_schema():
    assert looks_like_schema({"type": "string"})
    assert looks_like_schema({"type": "string", "editor": "document"})
    assert looks_like_schema({"type": ["string", "null"], "description": "x"})
    assert not looks_like_schema("{{doc_id}}")
    assert not looks_like_schema({"type": "invoice", "id": 3})  # a value that happens to have `type`
    assert not looks_like_schema({"type": "string", "value": "x"})  # a key schemas do not have


def test_input_is_schema_points_at_the_input_entry():
    text = HEAD + """\
  start:
    type: interaction
    interaction: sys:GeneralAgent
    input:
      invoice: {type: string, editor: document}
    writes: [status]
    transitions: [{to: done}]
  done: {type: final}
"""
    diags = rules(text)
    assert brief(diags) == [("input-is-schema", 20, 16)]
    assert diags[0].path == "nodes.start.input.invoice"
    assert diags[0].hint.startswith('use a template such as "{{invoice}}"')


def test_document_fields_need_format_and_editor_at_any_depth():
    text = """\
    format_version: 1
    process: p
    initial: done
    context:
      schema:
        type: object
        properties:
          contract: {type: string, format: document}
          attachments:
            type: array
            items: {type: string, editor: document}
    nodes:
      done: {type: final}
    """
    diags = rules(text)
    assert brief(diags) == [("document-field", 8, 40), ("document-field", 11, 39)]
    assert diags[0].path == "context.schema.properties.contract.format"
    assert diags[1].path == "context.schema.properties.attachments.items.editor"
    assert "editor: document" in diags[0].hint
    assert "format: document" in diags[1].hint


def test_undeclared_writes_of_context_update_set_context_and_collect():
    text = HEAD + """\
  start:
    type: tool
    config: {context_update: {status: ok, decision: yes}}
    writes: [status]
    transitions: [{to: mark}]
  mark:
    type: tool
    tool: set_context
    input: {updates: {decision: accepted}}
    transitions: [{to: each}]
  each:
    type: foreach
    foreach: lines
    node: {type: tool, tool: noop}
    collect: {into: results}
    transitions: [{to: done}]
  done: {type: final}
"""
    diags = rules(text)
    assert brief(diags) == [("undeclared-write", 18, 43), ("undeclared-write", 24, 23), ("undeclared-write", 30, 21)]
    assert [d.path for d in diags] == [
        "nodes.start.config.context_update.decision",
        "nodes.mark.input.updates.decision",
        "nodes.each.collect.into",
    ]
    assert diags[0].hint.startswith("add `decision` to this node's `writes`")


def test_interaction_without_writes_and_human_task_fields_are_not_undeclared_writes():
    text = HEAD + """\
  start:
    type: human_task
    task:
      title: Review
      fields: [{name: notes, type: text}]
    transitions: [{to: ask}]
  ask:
    type: interaction
    interaction: sys:GeneralAgent
    transitions: [{to: done}]
  done: {type: final}
"""
    assert rules(text) == []


def test_write_not_in_schema_suggests_the_close_property():
    text = HEAD + """\
  start:
    type: agent
    writes: [status, decison]
    transitions: [{to: done, trigger: agent}]
  done: {type: final}
"""
    diags = rules(text)
    assert brief(diags) == [("write-not-in-schema", 18, 22)]
    assert diags[0].hint == "did you mean `decision`?"


def test_write_not_in_schema_also_for_an_open_schema():
    # an agent's result schema comes from the declared properties: an undeclared write would be
    # dropped at run time, so an open schema does not excuse it; the hint shows what to add
    open_schema = """\
    format_version: 1
    process: p
    initial: start
    context: {schema: {type: object, additionalProperties: true}}
    nodes:
      start: {type: agent, writes: [anything], transitions: [{to: done, trigger: agent}]}
      done: {type: final}
    """
    diags = rules(open_schema)
    assert brief(diags) == [("write-not-in-schema", 6, 33)]
    assert diags[0].hint == "add `anything: {type: string}` under context.schema.properties (with its real type)"
    no_context = "\n".join(line for line in open_schema.splitlines() if "context:" not in line)
    assert [d.code for d in rules(no_context)] == ["write-not-in-schema"]
    closed = open_schema.replace("additionalProperties: true", "properties: {}, additionalProperties: false")
    diags = rules(closed)
    assert brief(diags) == [("write-not-in-schema", 6, 33)]
    assert diags[0].hint == "add `anything` to `context.schema.properties`"
    declared = open_schema.replace("additionalProperties: true", "properties: {anything: {type: string}}")
    assert rules(declared) == []


def test_write_not_in_schema_for_a_fanout_child_without_collect():
    text = """\
    format_version: 1
    process: p
    initial: each
    context:
      schema: {type: object, properties: {items: {type: array}, results: {type: array}}, required: [items]}
    nodes:
      each:
        type: foreach
        foreach: items
        as: item
        node: {type: agent, prompt: "{{ item }}", writes: [verdict]}
        COLLECT
        transitions: [{to: done}]
      done: {type: final}
    """
    diags = rules(text.replace("COLLECT", "writes: [verdict]"))
    assert [d.path for d in diags if d.code == "write-not-in-schema"][:1] == ["nodes.each.node.writes[0]"]
    # with `collect`, the child's writes shape the per-item result, not the context
    collected = rules(text.replace("COLLECT", "collect: results\n    writes: [results]"))
    assert [d for d in collected if d.code == "write-not-in-schema"] == []


def test_inline_definitions_are_held_to_their_own_schema():
    text = HEAD + """\
  start:
    type: process
    process_definition:
      format_version: 1
      process: child
      initial: work
      context:
        schema: {type: object, properties: {verdict: {type: string}}}
      nodes:
        work: {type: agent, writes: [status], transitions: [{to: done, trigger: agent}]}
        done: {type: final}
    transitions: [{to: done}]
  done: {type: final}
"""
    diags = rules(text)
    # `status` is in the parent's schema but not in the child's own
    assert brief(diags) == [("write-not-in-schema", 25, 38)]
    assert diags[0].path == "nodes.start.process_definition.nodes.work.writes[0]"


def test_role_assignees():
    text = HEAD + """\
  start:
    type: human_task
    task: {title: Review, assignee: "role:legal"}
    transitions: [{to: second}]
  second:
    type: human_task
    task: {title: Review, assignee: "group:"}
    transitions: [{to: helper}]
  helper:
    type: agent
    ask_user: role:finance
    transitions: [{to: done, trigger: agent}]
  done: {type: final}
"""
    diags = rules(text)
    assert brief(diags) == [("role-assignee", 18, 37), ("role-assignee", 22, 37), ("role-assignee", 26, 15)]
    assert diags[0].hint.startswith("use `group:legal`")
    assert diags[2].hint.startswith("use `group:finance`")


def test_fanout_children_are_leaf_work_without_routing():
    text = HEAD + """\
  start:
    type: foreach
    foreach: lines
    node:
      type: tool
      tool: noop
      needs: [start]
    transitions: [{to: fan}]
  fan:
    type: branch
    branches:
      - id: legal
        node: {type: final}
      - id: legal
        node: {type: tool, tool: noop}
    transitions: [{to: done}]
  done: {type: final}
"""
    diags = rules(text)
    assert brief(diags) == [("fanout-child", 22, 7), ("fanout-child", 28, 22), ("bad-value", 29, 13)]
    assert diags[0].path == "nodes.start.node.needs"
    assert diags[1].path == "nodes.fan.branches[0].node.type"
    assert "used twice" in diags[2].message


def test_foreach_limits():
    text = """\
    format_version: 1
    process: p
    initial: each
    context:
      schema:
        type: object
        properties:
          order:
            type: object
            properties:
              lines: {type: array, maxItems: 20000}
        required: [order]
    nodes:
      each:
        type: foreach
        foreach: order.lines
        max_concurrency: 0
        node: {type: tool, tool: noop}
        transitions: [{to: done}]
      done: {type: final}
    """
    diags = rules(text)
    assert brief(diags) == [("foreach-limit", 16, 14), ("foreach-limit", 17, 22)]
    assert "20000 items" in diags[0].message
    assert "outside 1..1000" in diags[1].message


def test_set_context_envelope():
    text = HEAD + """\
  start:
    type: tool
    tool: set_context
    input: {status: ok}
    writes: [status]
    transitions: [{to: second}]
  second:
    type: tool
    tool: set_context
    input: {updates: ok}
    transitions: [{to: third}]
  third:
    type: tool
    tool: set_context
    transitions: [{to: done}]
  done: {type: final}
"""
    diags = rules(text)
    assert brief(diags) == [("set-context-envelope", 19, 13), ("set-context-envelope", 25, 22), ("set-context-envelope", 27, 3)]
    assert diags[0].hint == "move it under `input.updates` (`updates: {status: ...}`)"


def test_allow_skip_without_skippable():
    text = HEAD + """\
  start:
    type: tool
    tool: noop
    metadata: {supervisor: {allow_skip: true}}
    transitions: [{to: done}]
  done: {type: final}
"""
    diags = rules(text)
    assert brief(diags) == [("skip-not-skippable", 19, 41)]
    assert "skippable: true" in diags[0].hint


def test_control_tools_are_refused_but_removing_one_is_fine():
    text = HEAD + """\
  start:
    type: agent
    tools: [+set_context, -skip_node, fetch_document, transition_to]
    transitions: [{to: done, trigger: agent}]
  done: {type: final}
"""
    diags = rules(text)
    assert brief(diags) == [("control-tool", 18, 13), ("control-tool", 18, 55)]
    assert [d.path for d in diags] == ["nodes.start.tools[0]", "nodes.start.tools[3]"]


def test_context_initial_over_64_kb():
    big = "x" * (64 * 1024)
    text = f"""\
format_version: 1
process: p
initial: done
context:
  schema: {{type: object, properties: {{blob: {{type: string}}}}}}
  initial:
    blob: {big}
nodes:
  done: {{type: final}}
"""
    diags = rules(text)
    assert brief(diags) == [("context-too-large", 7, 5)]
    assert "65,536" in diags[0].message


def test_bad_schemas_in_context_and_interactions():
    process = """\
    format_version: 1
    process: p
    initial: done
    context:
      schema:
        type: object
        properties:
          amount: {type: money}
    nodes:
      done: {type: final}
    """
    diags = rules(process)
    assert brief(diags) == [("bad-schema", 8, 22)]
    assert diags[0].path == "context.schema.properties.amount.type"
    interaction = """\
    kind: interaction
    name: summarize
    prompts: [{role: user, template: Summarize.}]
    result_schema: {type: object, required: summary}
    """
    diags = rules(interaction)
    assert brief(diags) == [("bad-schema", 4, 41)]
    assert "is not of type 'array'" in diags[0].message
