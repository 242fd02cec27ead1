"""The `graph_shape` pass: targets, reachability, exits, condition defaults, pipeline needs."""

from __future__ import annotations

from checking import brief, diagnostics

GRAPH_CODES = {
    "unknown-target", "unreachable-node", "dead-end", "final-has-exit", "condition-no-default",
    "unknown-need", "cycle", "wrong-control", "agent-transition", "bad-value",
}


def shape(text: str) -> list:
    """Diagnostics of this pass's codes for one document (other passes' findings left out)."""
    return diagnostics(text, GRAPH_CODES)


HEAD = """\
format_version: 1
process: p
initial: start
context:
  schema:
    type: object
    properties:
      amount: {type: number}
      decision: {type: string}
    required: [amount]
  initial: {}
nodes:
"""


def test_valid_process_has_no_shape_findings():
    text = HEAD + """\
  start:
    type: condition
    branches:
      - {to: review, when: {">": [{var: amount}, 100]}}
      - {to: done, default: true}
  review:
    type: human_task
    task:
      title: Review
      fields:
        - {name: decision, type: select, required: true, options: [approve, reject]}
    writes: [decision]
    transitions:
      - {to: done, guard: {"==": [{var: decision}, approve]}}
      - {to: rejected, guard: {"==": [{var: decision}, reject]}}
  done: {type: final}
  rejected: {type: final}
"""
    # every exit of `review` is guarded and there is no fallback: allowed (the run fails at
    # run time if nothing matches), so nothing is reported
    assert shape(text) == []


def test_unknown_target_points_at_the_to_value_with_a_did_you_mean():
    text = HEAD + """\
  start:
    type: tool
    tool: noop
    transitions:
      - to: reveiw
  review:
    type: tool
    tool: noop
    transitions:
      - to: done
  done: {type: final}
"""
    diags = shape(text)
    # the misspelt node counts as reached: no cascade of unreachable-node for review and done
    assert brief(diags) == [("unknown-target", 17, 13)]
    assert diags[0].path == "nodes.start.transitions[0].to"
    assert diags[0].hint == "did you mean `review`?"


def test_unknown_initial_lists_the_nodes_when_nothing_is_close():
    text = HEAD.replace("initial: start", "initial: begin") + """\
  start: {type: tool, tool: noop, transitions: [{to: done}]}
  done: {type: final}
"""
    diags = shape(text)
    assert brief(diags) == [("unknown-target", 3, 10)]
    assert diags[0].hint == "nodes are: `done`, `start`"


def test_unknown_condition_branch_and_timeout_targets():
    text = HEAD + """\
  start:
    type: condition
    branches:
      - {to: reviw, when: {">": [{var: amount}, 100]}}
      - {to: done, default: true}
  review:
    type: human_task
    task: {title: Review}
    timeout: 1h
    on_timeout: expird
    transitions: [{to: done}]
  done: {type: final}
  expired: {type: final}
"""
    diags = shape(text)
    assert brief(diags) == [("unknown-target", 16, 14), ("unknown-target", 22, 17)]
    assert [d.hint for d in diags] == ["did you mean `review`?", "did you mean `expired`?"]


def test_unreachable_node_points_at_the_node_key():
    text = HEAD + """\
  start: {type: tool, tool: noop, transitions: [{to: done}]}
  orphan:
    type: tool
    tool: noop
    transitions: [{to: done}]
  done: {type: final}
"""
    diags = shape(text)
    assert brief(diags) == [("unreachable-node", 14, 3)]
    assert diags[0].path == "nodes.orphan"
    assert "`orphan`" in diags[0].message


def test_dead_end_and_final_with_exit():
    text = HEAD + """\
  start:
    type: tool
    tool: noop
    transitions:
      - {to: stuck, guard: {">": [{var: amount}, 1]}}
      - {to: done}
  stuck:
    type: tool
    tool: noop
  done:
    type: final
    transitions: [{to: start}]
"""
    diags = shape(text)
    assert brief(diags) == [("dead-end", 19, 3), ("final-has-exit", 24, 5)]
    assert diags[0].hint.startswith("add `transitions:`")


def test_condition_defaults():
    text = HEAD + """\
  start:
    type: condition
    branches:
      - {to: done, when: {">": [{var: amount}, 1]}}
  second:
    type: condition
    branches:
      - {to: done, default: true, when: {">": [{var: amount}, 1]}}
      - {to: done, default: true}
  done: {type: final}
"""
    diags = shape(text)
    assert brief(diags) == [
        ("condition-no-default", 15, 5),
        ("unreachable-node", 17, 3),
        ("bad-value", 20, 41),  # the default arm also has a `when`
        ("bad-value", 21, 29),  # a second default arm
    ]
    assert "no `default: true` branch" in diags[0].message


def test_agent_transition_on_a_node_that_is_not_an_agent():
    text = HEAD + """\
  start:
    type: agent
    writes: [decision]
    transitions: [{to: review, trigger: agent}]
  review:
    type: human_task
    task: {title: Review}
    transitions: [{to: done, trigger: agent}]
  done: {type: final}
"""
    diags = shape(text)
    assert brief(diags) == [("agent-transition", 20, 39)]
    assert diags[0].path == "nodes.review.transitions[0].trigger"


def test_pipeline_fields_in_a_process_are_wrong_control():
    text = HEAD + """\
  start: {type: tool, tool: noop, transitions: [{to: done}]}
  done:
    type: final
    needs: [start]
    when: {">": [{var: amount}, 1]}
"""
    assert brief(shape(text)) == [("wrong-control", 16, 5), ("wrong-control", 17, 5)]


def test_inline_process_definition_is_checked_with_nested_paths():
    text = HEAD + """\
  start:
    type: process
    process_definition:
      format_version: 1
      process: child
      initial: extract
      nodes:
        extract: {type: tool, tool: noop, transitions: [{to: dnoe}]}
        done: {type: final}
    transitions: [{to: done}]
  done: {type: final}
"""
    diags = shape(text)
    assert brief(diags) == [("unknown-target", 20, 62)]
    assert diags[0].path == "nodes.start.process_definition.nodes.extract.transitions[0].to"


PIPE = """\
kind: pipeline
name: pipe
nodes:
"""


def test_valid_pipeline_has_no_shape_findings():
    text = PIPE + """\
  a: {type: tool, tool: noop}
  b: {type: tool, tool: noop, needs: [a]}
  c: {type: tool, tool: noop, needs: [a, b]}
"""
    assert shape(text) == []


def test_pipeline_unknown_need():
    text = PIPE + """\
  fetch: {type: tool, tool: noop}
  summarize:
    type: tool
    tool: noop
    needs: [fetch, fecth]
"""
    diags = shape(text)
    assert brief(diags) == [("unknown-need", 8, 20)]
    assert diags[0].hint == "did you mean `fetch`?"


def test_pipeline_cycle_is_named():
    text = PIPE + """\
  a: {type: tool, tool: noop, needs: [c]}
  b: {type: tool, tool: noop, needs: [a]}
  c: {type: tool, tool: noop, needs: [b]}
  d: {type: tool, tool: noop}
"""
    diags = shape(text)
    assert brief(diags) == [("cycle", 5, 39)]
    assert diags[0].message == "the `needs` form a cycle: a → b → c → a"


def test_pipeline_self_need_is_a_cycle():
    text = PIPE + "  a: {type: tool, tool: noop, needs: [a]}\n"
    diags = shape(text)
    assert [d.message for d in diags] == ["the `needs` form a cycle: a → a"]


def test_process_fields_in_a_pipeline_are_wrong_control():
    text = PIPE + """\
  a:
    type: tool
    tool: noop
    transitions: [{to: b}]
  b:
    type: condition
    branches: [{to: a, default: true}]
"""
    diags = shape(text)
    assert brief(diags) == [("wrong-control", 7, 5), ("wrong-control", 9, 11)]
    assert diags[0].hint.startswith("list the nodes this one waits for in `needs:`")


def test_other_kinds_are_skipped():
    text = """\
kind: interaction
name: summarize
prompts:
  - {role: user, template: Summarize this.}
"""
    assert shape(text) == []
