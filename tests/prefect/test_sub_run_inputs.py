"""A sub-run's inputs are the parent definition's to get right: a child started with a value its
input schema refuses, or without a required input, fails the parent's node as a ``definition``
error naming the input — never as an ``internal`` error of Prefect's parameter validation."""

from __future__ import annotations

import inspect

import pytest

CHILD = """
kind: workflow
name: counted_child
input_schema: {type: object, properties: {n: {type: integer}}, required: [n]}
steps:
  - name: log
    params: {message: "n=${n}"}
"""

PARENT = """
kind: workflow
name: counting_parent
steps:
  - type: workflow
    name: counted_child
    params: {n: 3}
"""


def _child_input(value):
    """The parent's child node with other params (the checker refuses these, so after compiling)."""
    def mutate(plan):
        node_id = next(iter(plan.nodes))
        node = plan.nodes[node_id]
        body = node.body.model_copy(update={"input": value})
        return plan.model_copy(update={"nodes": {**plan.nodes, node_id: node.model_copy(update={"body": body})}})
    return mutate


@pytest.mark.parametrize(("given", "named"), [({"n": "text"}, "n"), (None, "n"), ({}, "n")])
def test_a_child_given_inputs_its_schema_refuses_is_a_definition_error(run_def, given, named):
    result = run_def({"counted_child.yaml": CHILD, "counting_parent.yaml": PARENT}, "counting_parent",
                     mutate=_child_input(given))
    assert result["status"] == "failed", result
    assert result["error_kind"] == "definition", result
    assert named in result["error"] and "FieldInfo" not in result["error"], result


def test_a_required_flow_parameter_has_no_default():
    from flows.prefect.build import flow_signature

    class _Plan:
        input_schema = {"properties": {"n": {"type": "integer", "description": "how many"}, "m": {"type": "string"}},
                        "required": ["n"]}

    params = flow_signature(_Plan()).parameters  # type: ignore[arg-type]
    assert params["n"].default is inspect.Parameter.empty
    assert params["m"].default is not inspect.Parameter.empty
