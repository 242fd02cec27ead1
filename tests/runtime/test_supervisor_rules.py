"""The rules every supervisor command is checked against (flows.runtime.supervision.check), on a
compiled definition: exits, skip policy, overrides at definition and node level, context writes."""

from __future__ import annotations

import pytest

from compiler import compile_plan, workspace_from_texts
from flows.runtime.supervision import Command, ProcessEvent, check, exits_of

TEXT = """
format_version: 1
process: ruled
initial: a
metadata:
  supervisor: {definition_policy}
context:
  schema:
    type: object
    properties:
      n: {{type: integer, minimum: 0}}
      _seen: {{type: boolean}}
  initial: {{n: 1}}
nodes:
  a:
    type: tool
    config: {{context_update: {{n: 2}}}}
    writes: [n]
    metadata: {{supervisor: {node_policy}}}
    transitions: [{{to: b}}]
  b:
    type: tool
    skippable: true
    config: {{context_update: {{n: 3}}}}
    writes: [n]
    transitions: [{{to: c, guard: {{">": [{{var: n}}, 10]}}}}, {{to: done}}]
  c:
    type: tool
    config: {{context_update: {{n: 4}}}}
    writes: [n]
    transitions: [{{to: done}}]
  done: {{type: final}}
"""


def plan(definition_policy: str = "{}", node_policy: str = "{}"):
    ws = workspace_from_texts({"ruled.yaml": TEXT.format(definition_policy=definition_policy, node_policy=node_policy)})
    return compile_plan(ws, "ruled")


def verdict(p, kind: str, at: str, name: str, **args) -> str | None:
    event = ProcessEvent(kind, at, exits_of(p.successors(at)))  # type: ignore[arg-type]
    return check(Command(name, args), event, plan=p, context={"n": 1}, visited={"a"})


def test_transition_to_follows_declared_exits_unless_overridden():
    assert verdict(plan(), "node_completed", "a", "transition_to", node="b") is None
    assert "not a declared exit of `a`" in verdict(plan(), "node_completed", "a", "transition_to", node="c")
    assert verdict(plan(), "node_completed", "b", "transition_to", node="c") is None  # guarded, still declared
    assert "no node 'zz'" in verdict(plan(), "node_completed", "a", "transition_to", node="zz")
    assert verdict(plan("{allow_transition_override: true}"), "node_completed", "a", "transition_to", node="c") is None


def test_node_level_policy_wins_over_the_definitions():
    overriding = plan("{allow_transition_override: true}", "{allow_transition_override: false}")
    assert "not a declared exit" in verdict(overriding, "node_completed", "a", "transition_to", node="c")
    allowing = plan("{}", "{allow_transition_override: true}")
    assert verdict(allowing, "node_completed", "a", "transition_to", node="c") is None


def test_skip_needs_skippable_or_allow_skip():
    assert verdict(plan(), "node_entered", "b", "skip_node") is None
    assert "`a` is not skippable" in verdict(plan(), "node_entered", "a", "skip_node")
    assert verdict(plan("{allow_skip: true}"), "node_entered", "a", "skip_node") is None
    # at node level, allow_skip takes a definition-wide allowance away
    assert "not skippable" in verdict(plan("{allow_skip: true}", "{allow_skip: false}"), "node_entered", "a", "skip_node")


def test_set_context_is_checked_against_the_schema_and_never_writes_internal_fields():
    assert verdict(plan(), "node_entered", "a", "set_context", updates={"n": 5}) is None
    assert "internal fields cannot be written: _seen" in verdict(plan(), "node_entered", "a", "set_context",
                                                                 updates={"_seen": True})
    assert "violates context.schema" in verdict(plan(), "node_entered", "a", "set_context", updates={"n": -1})
    assert "needs `updates`" in verdict(plan(), "node_entered", "a", "set_context")


@pytest.mark.parametrize(("kind", "name", "refused"), [
    ("run_started", "transition_to", True), ("node_entered", "retry_node", True),
    ("node_completed", "skip_node", True), ("human_task_waiting", "set_context", True),
    ("human_task_waiting", "continue_process", False), ("node_failed", "retry_node", False),
    ("no_transition", "transition_to", False),
])
def test_each_event_takes_only_its_commands(kind, name, refused):
    reason = verdict(plan(), kind, "a", name, node="b", updates={"n": 1})
    assert (reason is not None) is refused, reason


def test_retry_reenters_the_current_a_visited_or_a_declared_node_only():
    assert verdict(plan(), "node_failed", "b", "retry_node") is None
    assert verdict(plan(), "node_failed", "b", "retry_node", node="a") is None  # visited before
    assert verdict(plan(), "node_failed", "b", "retry_node", node="c") is None  # a declared exit of b
    assert "neither the current node" in verdict(plan(), "node_failed", "a", "retry_node", node="c")
    assert "final node" in verdict(plan(), "node_failed", "b", "retry_node", node="done")


def test_unknown_commands_and_a_reasonless_fail_are_refused():
    assert "not a process-control command" in verdict(plan(), "node_entered", "a", "rm_rf")
    assert "needs a `reason`" in verdict(plan(), "node_entered", "a", "fail_process")
