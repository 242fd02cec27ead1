"""Plan node bodies: every key of the IR node reaches the Plan, and nothing outside the IR does.

Every runnable definition under ``definitions/``, the mini process, the lowering tests'
template and workflows and an inline process here is compiled; for each Plan node (fan-out
children and inline child Plans included) its body in the Plan's JSON must be the IR node it came
from — the node of the process or pipeline, or of the pipeline a template or workflow lowers to —
dumped by alias without None values, as bodies always were; the typed body must be of that node's
class and dump to the same dict; and reading that JSON back into the IR must give the same dict
again (no key the IR does not declare, none dropped). The Plan read back from its JSON must be
the same Plan.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError

from compiler import compile_plan, load_workspace, workspace_from_texts
from compiler.ir import BranchNode, ForeachNode, FormDef, Node, PipelineDef, ProcessDef, ProcessNode, ToolNode
from compiler.lower import lower
from compiler.plan import RUNNABLE_KINDS, Plan, PlanNode, ir_json
from compiler.tools import all_agent_tools

from mini_process import mini_workspace
from test_lower import _ws as lowering_workspace

ROOT = Path(__file__).resolve().parents[2]
NODE = TypeAdapter(Node)

#: What the other sources lack: an inline child process, an envelope `collect`, a mixed-type
#: `options` list, a numeric `timeout`, and YAML dates and timestamps (JSON strings in the Plan).
INLINE = """\
format_version: 1
process: inline_parent
initial: fan
context:
  schema:
    type: object
    properties:
      invoices: {type: array}
      checked: {type: array}
      child_result: {type: boolean}
      ok: {type: [boolean, number, string]}
    required: [invoices]
nodes:
  fan:
    type: foreach
    foreach: invoices
    as: invoice
    item_id: "{{invoice.id}}"
    max_concurrency: 2
    failure_policy: collect_errors
    collect: {into: checked, include: [status, item_id, output]}
    writes: [checked]
    node:
      type: tool
      tool: noop
      input: {since: 2024-01-01, id: "{{invoice.id}}"}
    transitions: [{to: sub}]
  sub:
    type: process
    input: {at: 2024-02-03T04:05:06Z}
    returns: {from: context.ok}
    writes: [child_result]
    process_definition:
      format_version: 1
      process: inline_child
      initial: set
      context:
        schema: {type: object, properties: {ok: {type: boolean}}}
      nodes:
        set:
          type: tool
          config: {context_update: {ok: true}}
          writes: [ok]
          transitions: [{to: done}]
        done: {type: final}
    transitions: [{to: ask}]
  ask:
    type: human_task
    task:
      title: "Check {{child_result}}"
      fields:
        - {name: ok, type: select, options: [true, 1, 1.5, "yes"], required: true}
    timeout: 30
    on_timeout: done
    writes: [ok]
    transitions: [{to: done}]
  done: {type: final}
"""


def _workspaces() -> dict[str, Any]:
    return {"definitions": load_workspace([ROOT / "definitions"]), "mini": mini_workspace(), "lowering": lowering_workspace(),
            "inline": workspace_from_texts({"inline.yaml": INLINE}, tools=("noop",))}


def _cases() -> list[tuple[str, str]]:
    return [(label, name) for label, ws in _workspaces().items() for name in ws.named(*RUNNABLE_KINDS)]


def _source(ws: Any, name: str) -> ProcessDef | PipelineDef:
    """The process or pipeline a runnable definition compiles from (templates/workflows lowered)."""
    defn = ws.named(*RUNNABLE_KINDS)[name].defn
    if isinstance(defn, (ProcessDef, PipelineDef)):
        return defn
    forms = {n: u.defn for n, u in ws.named("form").items() if isinstance(u.defn, FormDef)}
    return lower(defn, forms, all_agent_tools(ws.tools)).pipeline


def _pairs(plan: Plan, plan_json: dict[str, Any], defn: ProcessDef | PipelineDef, where: str):
    """(where, IR node, Plan node, the node's JSON) for every node, recursively."""
    assert set(plan.nodes) == set(defn.nodes), where
    for nid, ir_node in defn.nodes.items():
        yield from _node_pairs(ir_node, plan.nodes[nid], plan_json["nodes"][nid], f"{where}.{nid}")


def _node_pairs(ir_node: Any, node: PlanNode, node_json: dict[str, Any], where: str):
    yield where, ir_node, node, node_json
    if isinstance(ir_node, ForeachNode):
        yield from _node_pairs(ir_node.node, node.children["node"], node_json["children"]["node"], f"{where}/node")
    elif isinstance(ir_node, BranchNode):
        assert set(node.children) == {arm.id for arm in ir_node.branches}, where
        for arm in ir_node.branches:
            yield from _node_pairs(arm.node, node.children[arm.id], node_json["children"][arm.id], f"{where}/{arm.id}")
    else:
        assert node.children == {} and node_json["children"] == {}, where
    if isinstance(ir_node, ProcessNode) and ir_node.process_definition is not None:
        assert node.child_plan is not None, where
        yield from _pairs(node.child_plan, node_json["child_plan"], ir_node.process_definition, f"{where}>")
    else:
        assert node.child_plan is None, where


def test_every_workspace_has_runnable_definitions():
    kinds = {ws.named(*RUNNABLE_KINDS)[name].kind for label, ws in _workspaces().items() for name in ws.named(*RUNNABLE_KINDS)}
    assert kinds == set(RUNNABLE_KINDS)  # every kind, the lowered ones included, is covered


@pytest.mark.parametrize(("label", "name"), _cases())
def test_bodies_are_the_ir_nodes(label, name):
    ws = _workspaces()[label]
    plan = compile_plan(ws, name)
    plan_json = plan.to_json()
    seen = 0
    for where, ir_node, node, node_json in _pairs(plan, plan_json, _source(ws, name), name):
        old = ir_node.model_dump(by_alias=True, exclude_none=True, mode="json")  # how the body was always made
        assert node_json["body"] == old, where
        assert type(node.body) is type(ir_node) and node.body_as(type(ir_node)) is node.body, where
        assert ir_json(node.body) == node.body_json() == old, where
        assert node_json["type"] == old["type"] == ir_node.type, where
        # the JSON read back into the IR (as Plan.model_validate does) keeps every key, adds none
        assert NODE.validate_python(old).model_dump(by_alias=True, exclude_none=True, mode="json") == old, where
        seen += 1
    assert seen >= len(plan.nodes)
    back = Plan.model_validate(plan_json)
    assert back == plan, name
    assert back.to_json() == plan_json, name


def test_body_as_names_the_node_and_its_type():
    plan = compile_plan(_workspaces()["inline"], "inline_parent")
    fan = plan.nodes["fan"]
    body = fan.body_as(ForeachNode)
    assert (body.foreach, body.as_, body.item_id, body.max_concurrency) == ("invoices", "invoice", "{{invoice.id}}", 2)
    assert fan.children["node"].body_as(ToolNode).input == {"since": "2024-01-01", "id": "{{invoice.id}}"}  # JSON values
    with pytest.raises(TypeError, match="node `fan` is a `foreach` node, not a ToolNode"):
        fan.body_as(ToolNode)


def test_a_plan_node_type_is_its_body_type():
    data = compile_plan(_workspaces()["inline"], "inline_parent").to_json()
    data["nodes"]["done"]["type"] = "tool"
    with pytest.raises(ValidationError, match="node `done` has type `tool` and a `final` body"):
        Plan.model_validate(data)
