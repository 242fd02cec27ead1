"""Every failure is recorded with its kind — definition, world, model or internal — on the visit
that failed and on the run, so that "the definition is wrong" can be told from "the world said no"
without reading the message (flows/runtime/errors.py)."""

from __future__ import annotations

import pytest
from jinja2 import UndefinedError

from flows.runtime.errors import (
    BudgetExhausted,
    ContextTooLarge,
    NodeFailed,
    NoTransition,
    WriteRejected,
    error_kind,
)
from test_process_runs import process, visits

pytestmark = pytest.mark.prefect


def _failed(run_id: str):
    return [(v.node_id, v.error_kind) for v in visits(run_id) if v.status == "failed"]


def _run(run_id: str):
    from flows.store import runs as run_store

    return run_store.require_run(run_id)


def test_the_kinds_of_errors_by_class_and_by_cause():
    from flows.llm.interactions import InvalidInput, PromptError
    from flows.llm.types import AgentStuck, InvalidOutput, LlmError
    from flows.tools.errors import ToolArgumentError, ToolError, UnknownTool, wrap_failure

    assert error_kind(UndefinedError("'x' is undefined")) == "definition"
    assert error_kind(WriteRejected("outside writes")) == "definition"
    assert error_kind(NoTransition("no transition")) == "definition"
    assert error_kind(UnknownTool("nope", "is not registered")) == "definition"
    assert error_kind(ToolArgumentError("t", "invalid arguments")) == "definition"
    assert error_kind(InvalidInput("i", ["bad"])) == "definition"
    assert error_kind(PromptError("segment")) == "definition"
    assert error_kind(ContextTooLarge("over the cap")) == "world"
    assert error_kind(BudgetExhausted("spent")) == "world"
    assert error_kind(wrap_failure("t", ValueError("boom"))) == "world"
    assert error_kind(ToolError("http_request", "private address refused")) == "world"
    assert error_kind(LlmError("unreachable")) == "world"
    assert error_kind(InvalidOutput("still invalid")) == "model"
    assert error_kind(AgentStuck("looping")) == "model"
    assert error_kind(RuntimeError("a bug")) == "internal"
    # a NodeFailed without a kind of its own has the kind of what it was raised from
    try:
        try:
            raise UndefinedError("'x' is undefined")
        except UndefinedError as exc:
            raise NodeFailed("node `a` failed") from exc
    except NodeFailed as wrapped:
        assert error_kind(wrapped) == "definition"
    # ... also when the cause is hidden (`from None` keeps the exception being handled)
    try:
        try:
            raise UndefinedError("'x' is undefined")
        except UndefinedError:
            raise LlmError("interaction `i`: 'x' is undefined") from None
    except LlmError as hidden:
        assert error_kind(hidden) == "world", "a class with a kind of its own wins over the context"
    assert error_kind(NodeFailed("explicit", kind="model")) == "model"


def test_a_write_the_schema_refuses_is_a_definition_error(run_def):
    # `increment` returns a number; the checker cannot see a Python tool's result type
    text = process("typed_kind", {"counter": "{type: string}"}, """
  start:
    type: tool
    tool: increment
    input: {value: 1}
    writes: [counter]
    transitions: [{to: done}]
  done: {type: final}
""")
    result = run_def({"typed_kind.yaml": text}, "typed_kind")
    assert result["status"] == "failed" and result["error_kind"] == "definition", result
    assert _failed(result["run_id"]) == [("start", "definition")]
    assert _run(result["run_id"]).error_kind == "definition"


def test_a_template_reading_a_missing_field_is_a_definition_error(run_def):
    text = process("undefined_kind", {"n": "{type: integer}", "counter": "{type: integer}"}, """
  start:
    type: tool
    tool: increment
    input: {value: "{{ n }}"}
    writes: [counter]
    transitions: [{to: done}]
  done: {type: final}
""", initial_ctx="{n: 1}")

    def read_missing(plan):  # the checker refuses the read, so make it after compiling
        body = plan.nodes["start"].body.model_copy(update={"input": {"value": "{{ missing }}"}})
        node = plan.nodes["start"].model_copy(update={"body": body})
        return plan.model_copy(update={"nodes": {**plan.nodes, "start": node}})

    result = run_def({"undefined_kind.yaml": text}, "undefined_kind", mutate=read_missing)
    assert result["status"] == "failed" and "missing" in result["error"], result
    assert result["error_kind"] == "definition"
    assert _failed(result["run_id"]) == [("start", "definition")]


def test_a_tool_that_raises_and_an_oversized_context_are_the_world(run_def):
    text = process("raises_kind", {"doubled": "{type: integer}"}, """
  start:
    type: tool
    tool: double_unless
    input: {value: 3, bad: 3}
    writes: [doubled]
    transitions: [{to: done}]
  done: {type: final}
""")
    result = run_def({"raises_kind.yaml": text}, "raises_kind")
    assert result["status"] == "failed" and result["error_kind"] == "world", result
    assert _failed(result["run_id"]) == [("start", "world")]
    big = process("big_kind", {"blob": "{type: string}"}, """
  start:
    type: tool
    tool: blob
    input: {size: 70000}
    writes: [blob]
    transitions: [{to: done}]
  done: {type: final}
""")
    result = run_def({"big_kind.yaml": big}, "big_kind")
    assert result["status"] == "failed" and result["error_kind"] == "world", result


def test_items_absorbed_by_collect_errors_keep_their_kind(run_def):
    text = process("items_kind", {"values": "{type: array, items: {type: integer}}",
                                  "results": "{type: array}"}, """
  start:
    type: foreach
    foreach: values
    as: v
    node:
      type: tool
      tool: double_unless
      input: {value: "{{ v }}", bad: 2}
    collect: results
    failure_policy: collect_errors
    writes: [results]
    transitions: [{to: done}]
  done: {type: final}
""", required="values")
    result = run_def({"items_kind.yaml": text}, "items_kind", {"values": [1, 2, 3]})
    assert result["status"] == "completed", result
    failed = [v for v in visits(result["run_id"]) if v.status == "failed"]
    assert [(v.item_key, v.error_kind) for v in failed] == [("1", "world")]


def test_a_sub_process_failure_carries_the_child_s_kind(run_def):
    child = process("child_kind", {"counter": "{type: string}"}, """
  start:
    type: tool
    tool: increment
    input: {value: 1}
    writes: [counter]
    transitions: [{to: done}]
  done: {type: final}
""")
    parent = process("parent_kind", {"out": "{type: object}"}, """
  start:
    type: process
    process: child_kind
    writes: [out]
    transitions: [{to: done}]
  done: {type: final}
""")
    result = run_def({"child_kind.yaml": child, "parent_kind.yaml": parent}, "parent_kind")
    assert result["status"] == "failed" and result["error_kind"] == "definition", result
    assert _failed(result["run_id"]) == [("start", "definition")]
