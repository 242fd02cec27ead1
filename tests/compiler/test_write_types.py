"""The `write_types` pass: answers and sub-process values that can never fit their field.

The golden fixture tests/fixtures/invalid/write_type.yaml has refusals with their positions;
here, what must stay accepted, and the places the pass looks into.
"""

from __future__ import annotations

from compiler import check_workspace, workspace_from_texts

HEAD = """
format_version: 1
process: wt
initial: start
context:
  schema:
    type: object
    properties:
      n: {type: integer}
      text: {type: string}
      maybe_text: {type: [string, "null"]}
      flag: {type: boolean}
      amount: {type: number}
      choice: {type: string, enum: [a, b]}
      items: {type: array, items: {type: integer}}
      out: {type: array}
    required: [items]
nodes:
"""


def _write_types(nodes: str) -> list[tuple[str, str]]:
    report = check_workspace(workspace_from_texts({"wt.yaml": HEAD + nodes}))
    return [(d.path, d.message) for d in report.diagnostics if d.code == "write-type"]


def test_what_can_fit_is_accepted():
    # 2.5 for `n` or free text for `choice` is refused when answered (and the person answers again);
    # only what can never fit is the definition's mistake
    assert _write_types("""
  start:
    type: human_task
    task:
      title: Decide
      fields:
        - {name: choice, type: select, options: [a, b], required: true}
        - {name: maybe_text, type: select, options: [x, y]}
        - {name: amount, type: number, required: true}
        - {name: n, type: number, required: true}
        - {name: text, type: text, required: true}
        - {name: flag, type: boolean}
    writes: [choice, maybe_text, amount, n, text, flag]
    transitions: [{to: done}]
  done: {type: final}
""") == []


def test_an_answer_that_can_never_fit_is_refused():
    found = _write_types("""
  start:
    type: human_task
    task:
      title: Decide
      fields:
        - {name: choice, type: select, options: [a, c], required: true}
        - {name: n, type: text, required: true}
        - {name: text, type: boolean, required: true}
        - {name: flag, type: integer, required: true}
    writes: [choice, n, text, flag]
    transitions: [{to: done}]
  done: {type: final}
""")
    assert [p for p, _ in found] == ["nodes.start.task.fields[0].options[1]", "nodes.start.task.fields[1].type",
                                     "nodes.start.task.fields[2].type", "nodes.start.task.fields[3].type"], found
    assert "could never be answered" in found[1][1]


def test_a_field_the_node_does_not_write_is_not_checked():
    assert _write_types("""
  start:
    type: human_task
    task:
      title: Decide
      fields: [{name: n, type: text}]
    transitions: [{to: done}]
  done: {type: final}
""") == []


def test_inline_children_are_checked():
    found = _write_types("""
  start:
    type: process
    writes: [out]
    process_definition:
      format_version: 1
      process: wt_child
      initial: ask
      context:
        schema: {type: object, properties: {ok: {type: boolean}}}
      nodes:
        ask:
          type: human_task
          task: {title: Ok?, fields: [{name: ok, type: select, options: [true, "no"], required: true}]}
          writes: [ok]
          transitions: [{to: done}]
        done: {type: final}
    transitions: [{to: done}]
  done: {type: final}
""")
    assert [p for p, _ in found] == ["nodes.start.process_definition.nodes.ask.task.fields[0].options[1]"], found


CHILD = """
format_version: 1
process: wt_child
initial: done
context:
  schema:
    type: object
    properties:
      n: {type: integer}
      s: {type: string}
      verdict: {type: string, enum: [pass, fail]}
    required: [n]
nodes:
  done: {type: final}
"""
WORKFLOW_CHILD = """
kind: workflow
name: wt_flow
input_schema: {type: object, properties: {tags: {type: array, items: {type: string}}}, required: [tags]}
steps:
  - {name: log, params: {message: "${tags}"}}
"""


def _sub(nodes: str) -> list[tuple[str, str]]:
    report = check_workspace(workspace_from_texts({"wt.yaml": HEAD + nodes, "child.yaml": CHILD, "flow.yaml": WORKFLOW_CHILD},
                                                  tools=("log",)))
    return [(d.path, d.message) for d in report.diagnostics if d.code == "write-type"]


def test_sub_process_inputs_and_returns_that_fit_are_accepted():
    assert _sub("""
  start:
    type: process
    process: wt_child
    input: {n: "{{ n }}", s: "{{ text }} and more", verdict: pass}
    returns: {from: context.s}
    writes: [text]
    transitions: [{to: flow}]
  flow:
    type: process
    process: wt_flow
    input: {tags: [a, b]}
    returns: {from: outcome}
    writes: [maybe_text]
    transitions: [{to: done}]
  done: {type: final}
""") == []


def test_sub_process_inputs_and_returns_of_the_wrong_type_are_refused():
    found = _sub("""
  start:
    type: process
    process: wt_child
    input: {n: many, s: "{{ amount }}", verdict: maybe}
    returns: {from: context.n}
    writes: [flag]
    transitions: [{to: back}]
  back:
    type: process
    process: wt_child
    input: {n: 1}
    returns: {context: [n]}
    writes: [n]
    transitions: [{to: flow}]
  flow:
    type: process
    process: wt_flow
    input: {tags: "{{ text }}"}
    returns: {from: outcome}
    writes: [amount]
    transitions: [{to: done}]
  done: {type: final}
""")
    assert [p for p, _ in found] == [
        "nodes.start.input.n", "nodes.start.input.s", "nodes.start.input.verdict", "nodes.start.returns.from",
        "nodes.flow.input.tags", "nodes.flow.returns.from"], found
    assert "`amount`" in found[1][1] and "passed whole" in found[1][1]
