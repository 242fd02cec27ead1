"""The executable Plan: snapshot, derived schemas, versions, lookups and errors."""

from __future__ import annotations

import json

import pytest
import yaml
from pydantic import ValidationError

from compiler import CompileError, compile_plan, workspace_from_texts
from compiler.plan import Plan, build_plan, canonical_version
from compiler.result_schema import derived_result_schema

from mini_process import MINI_INTERACTION, MINI_PROCESS, mini_workspace
from snapshot_util import check_snapshot


@pytest.fixture
def mini_ws():
    return mini_workspace()


def test_plan_snapshot(mini_ws):
    plan = compile_plan(mini_ws, "mini_review")
    check_snapshot("mini_review.plan.json", plan.to_json())


def test_plan_contents(mini_ws):
    plan = compile_plan(mini_ws, "mini_review")
    assert plan.kind == "process" and plan.control == "state_machine"
    assert plan.initial == "extract" and plan.entries == ["extract"]
    assert plan.finals == ["approved", "rejected"] and plan.halt_points == ["legal_review"]
    assert plan.input_schema == {"type": "object", "properties": {"doc_id": {"type": "string"}}, "required": ["doc_id"]}
    n = plan.nodes
    assert n["extract"].agent_tools == ["fetch_document", "think"]
    assert n["extract"].retry.retries == 2 and n["summarize"].retry.retries == 0
    assert n["extract"].result_schema["required"] == ["total_value"]
    assert n["extract"].next_node_enum is None
    assert n["summarize"].result_schema["properties"] == {"summary": {"type": "string"}}
    assert n["summarize"].agent_tools is None
    assert n["triage"].next_node_enum == ["route", "rejected"]
    assert n["triage"].result_schema["properties"]["_next_node"] == {"type": "string", "enum": ["route", "rejected"]}
    assert n["legal_review"].halt and not n["extract"].halt
    assert (n["extract"].lane, n["extract"].phase, n["extract"].order) == ("ai", "intake", 1)
    kinds = [(e.source, e.target, e.kind) for e in plan.edges if e.source in ("route", "legal_review")]
    assert kinds == [("route", "legal_review", "branch"), ("route", "approved", "default"),
                     ("legal_review", "approved", "transition"), ("legal_review", "rejected", "transition"),
                     ("legal_review", "rejected", "timeout")]
    assert "mini_review" in plan.summary() and "waits for a person" in plan.summary()
    json.dumps(plan.to_json())  # plain JSON all the way down


def test_plan_is_frozen(mini_ws):
    plan = compile_plan(mini_ws, "mini_review")
    with pytest.raises(ValidationError, match="frozen"):
        plan.name = "other"  # type: ignore[misc]
    assert Plan.model_validate(plan.to_json()) == plan  # round-trips


# --------------------------------------------------------------------------------------------
# derived result schemas


CONTEXT = {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "number", "minimum": 0}}}


def test_derived_schema_without_next_node():
    schema = derived_result_schema(CONTEXT, ["a", "b", "not_in_schema"], ["only_target"])
    assert schema == {
        "type": "object",
        "properties": {"a": {"type": "string"}, "b": {"type": "number", "minimum": 0}},
        "required": ["a", "b"],
        "additionalProperties": False,
    }
    schema["properties"]["b"]["minimum"] = 5
    assert CONTEXT["properties"]["b"]["minimum"] == 0  # copied, not shared


def test_derived_schema_with_next_node():
    schema = derived_result_schema(CONTEXT, ["a"], ["x", "y", "x"])
    assert schema["properties"]["_next_node"] == {"type": "string", "enum": ["x", "y"]}
    assert schema["required"] == ["a", "_next_node"]
    assert derived_result_schema(CONTEXT, [], None) == {"type": "object", "properties": {}, "required": [], "additionalProperties": False}


# --------------------------------------------------------------------------------------------
# versions


def _version(text: str, file: str = "mini_review.yaml") -> str:
    ws = workspace_from_texts({file: text, "mini_summarize.yaml": MINI_INTERACTION})
    return compile_plan(ws, "mini_review").version


def test_version_ignores_formatting_and_key_order():
    base = _version(MINI_PROCESS)
    assert len(base) == 12 and int(base, 16) >= 0
    data = yaml.safe_load(MINI_PROCESS)
    reordered = dict(reversed(list(data.items())))
    reordered["nodes"] = {k: dict(reversed(list(v.items()))) for k, v in data["nodes"].items()}
    assert _version(json.dumps(reordered, indent=7), "mini_review.json") == base
    respaced = "# a comment\n" + MINI_PROCESS.replace("\n", "   \n\n").replace("{to: ", "{ to:    ")
    assert _version(respaced) == base


def test_version_changes_with_content():
    base = _version(MINI_PROCESS)
    assert _version(MINI_PROCESS.replace("Review a small contract", "Review a large contract")) != base
    assert canonical_version({"a": 1}) == canonical_version({"a": 1}) != canonical_version({"a": 2})


# --------------------------------------------------------------------------------------------
# lookups, errors, inline children


def test_compile_plan_unknown_name(mini_ws):
    with pytest.raises(KeyError, match="did you mean `mini_review`"):
        compile_plan(mini_ws, "mini_reveiw")


def test_compile_plan_not_runnable(mini_ws):
    with pytest.raises(KeyError, match="`mini_summarize` is an interaction, not runnable"):
        compile_plan(mini_ws, "mini_summarize")
    unit = next(u for u in mini_ws.units if u.name == "mini_summarize")
    with pytest.raises(KeyError, match="not runnable"):
        build_plan(unit, mini_ws)


def test_compile_plan_reports_errors():
    broken = MINI_PROCESS.replace("transitions: [{to: summarize}]", "transitions: [{to: sumarize}]")
    ws = workspace_from_texts({"mini_review.yaml": broken, "mini_summarize.yaml": MINI_INTERACTION})
    with pytest.raises(CompileError) as exc:
        compile_plan(ws, "mini_review")
    assert any(d.code == "unknown-target" and d.file == "mini_review.yaml" for d in exc.value.diagnostics)


PARENT = """\
format_version: 1
process: parent_proc
initial: review
context:
  schema:
    type: object
    properties:
      invoice: {type: string}
      invoice_review: {type: string}
    required: [invoice]
nodes:
  review:
    type: process
    process_definition:
      format_version: 1
      process: invoice_review
      initial: extract
      context:
        schema: {type: object, properties: {decision: {type: string}, invoice: {type: string}}}
      nodes:
        extract: {type: tool, config: {context_update: {decision: ok}}, writes: [decision], transitions: [{to: done}]}
        done: {type: final}
    input: {invoice: "{{invoice}}"}
    returns: {from: context.decision}
    writes: [invoice_review]
    transitions: [{to: done}]
  done: {type: final}
"""


def test_inline_children_become_nested_plans():
    ws = workspace_from_texts({"parent.yaml": PARENT})
    plan = compile_plan(ws, "parent_proc")
    child = plan.nodes["review"].child_plan
    assert isinstance(child, Plan)
    assert child.name == "invoice_review" and child.initial == "extract" and child.finals == ["done"]
    assert child.nodes["extract"].writes == ["decision"]
    assert plan.to_json()["nodes"]["review"]["child_plan"]["name"] == "invoice_review"


def test_input_schema_includes_unwritten_properties():
    text = MINI_PROCESS.replace("      doc_id: {type: string}\n", "      doc_id: {type: string}\n      locale: {type: string}\n      region: {type: string}\n")
    text = text.replace("required: [doc_id]\n", "required: [doc_id]\n  initial: {region: eu}\n")
    ws = workspace_from_texts({"mini_review.yaml": text, "mini_summarize.yaml": MINI_INTERACTION})
    plan = compile_plan(ws, "mini_review")
    # the rest are written by nodes; region is an optional input whose default is its initial value
    assert list(plan.input_schema["properties"]) == ["doc_id", "locale", "region"]
    assert plan.input_schema["properties"]["region"]["default"] == "eu"
    assert plan.input_schema["required"] == ["doc_id"]
