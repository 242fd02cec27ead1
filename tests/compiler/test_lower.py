"""Lowering of templates and workflows to pipelines, and the lowered_kinds checks."""

from __future__ import annotations

from pathlib import Path

import pytest

from compiler import compile_plan, load_workspace, workspace_from_texts
from compiler.check import check_workspace, unit_findings
from compiler.ir import AgentNode, PipelineDef, ProcessNode, ToolNode
from compiler.lower import condition_clauses, lower, lower_condition, lower_workflow, to_jinja
from compiler.source import SourceMap
from compiler.workspace import Unit

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "invalid"

FORMS = {
    "in_form.yaml": """\
kind: form
name: in_form
groups:
  - name: company
    required: true
    fields:
      - {name: name, type: string, required: true}
""",
    "out_form.yaml": """\
kind: form
name: out_form
groups:
  - name: result
    required: true
    fields:
      - {name: text, type: text, required: true}
      - {name: score, type: integer}
""",
}

TEMPLATE = """\
kind: template
name: deal_review
description: Summarize then critique a deal.
input_form: in_form
steps:
  - key: summarize
    name: Summarize
    prompt: "Summarize {{input.company.name}}"
    output_key: summary
    output_form: out_form
  - key: critique
    parent: summarize
    prompt: "Critique {{summary.result.text}}"
    output_key: critique
    output_form: out_form
    tools_allowed: [fetch_document]
    retry_policy: {retries: 2, delay_seconds: 3}
    model: offline/echo
"""

WORKFLOW = """\
kind: workflow
name: intake
description: Intake of a document.
input_schema:
  type: object
  properties:
    documentId: {type: string}
    who: {type: string}
vars:
  names: {extract: "sys:ExtractInformation"}
  who: nobody
  greeting: "Hello ${who}"
steps:
  - name: setStatus
    params: {status: processing}
  - name: extractText
    params: {document: "${documentId}", note: "doc ${documentId}!"}
    output: extracted
  - name: child_flow
    type: workflow
    params: {text: "${extracted.text}"}
    condition: {extracted.hasText: {$eq: true}}
    output: classification
  - name: child_flow
    type: workflow
    async: true
  - name: describe
    import: [names]
    params: {document: "${documentId}", names: "${names}"}
    condition: {$in: {who: [a, b]}, extracted.size: {$gt: 10, $lte: 100}}
    projection: {$include: [name, description]}
    fetch: {type: document, query: {id: "${documentId}"}}
    output: info
  - name: log
    params: {message: "${greeting}"}
    condition: {$regexp: {greeting: "^Hello"}}
  - name: setStatus
    params: {status: done}
"""

CHILD = """\
kind: workflow
name: child_flow
steps:
  - name: log
    params: {message: child}
"""


ACTIVITIES = ("setStatus", "extractText", "describe")


def _ws():
    return workspace_from_texts({**FORMS, "t.yaml": TEMPLATE, "w.yaml": WORKFLOW, "c.yaml": CHILD}, tools=ACTIVITIES)


def _lowered_unit(unit: Unit, pipeline: PipelineDef) -> Unit:
    data = pipeline.model_dump(by_alias=True, exclude_none=True, mode="json")
    return Unit(file=unit.file, data=data, source=SourceMap(unit.file), defn=pipeline, kind="pipeline")


def _forms(ws):
    return {n: u.defn for n, u in ws.named("form").items()}


def test_sources_are_valid():
    assert check_workspace(_ws()).diagnostics == []


# --------------------------------------------------------------------------------------------
# template


def test_template_lowering():
    ws = _ws()
    pipeline, extras = lower(ws.get("deal_review", "template"), _forms(ws))
    assert pipeline.kind == "pipeline" and pipeline.name == "deal_review"
    schema = pipeline.context.schema_
    assert schema["required"] == ["input"]
    assert list(schema["properties"]) == ["input", "summary", "critique"]
    assert schema["properties"]["input"]["properties"]["company"]["required"] == ["name"]
    assert schema["properties"]["critique"]["properties"]["result"]["properties"]["score"] == {"type": "integer"}
    first, second = pipeline.nodes["summarize"], pipeline.nodes["critique"]
    assert isinstance(first, AgentNode) and isinstance(second, AgentNode)
    assert first.needs == [] and second.needs == ["summarize"]
    assert first.writes == ["summary"] and second.writes == ["critique"]
    assert first.prompt == "Summarize {{input.company.name}}" and first.title == "Summarize"
    assert first.tools == [] and second.tools == ["fetch_document"]
    assert first.retry is None and second.retry.retries == 2 and second.retry.delay_seconds == 3
    assert second.model == "offline/echo"
    assert extras["critique"]["source_step"] == "critique"


def test_template_plan_tools_and_result_schema():
    plan = compile_plan(_ws(), "deal_review")
    assert plan.kind == "template" and plan.control == "dag"
    assert plan.entries == ["summarize"]
    every = plan.nodes["summarize"].agent_tools  # no tools_allowed: every tool an agent may be given (seed)
    assert {"think", "plan", "fetch_document", "http_request"} <= set(every) and "set_context" not in every
    assert plan.nodes["critique"].agent_tools == ["fetch_document"]
    rs = plan.nodes["critique"].result_schema
    assert rs["required"] == ["critique"] and rs["additionalProperties"] is False
    assert plan.input_schema["required"] == ["input"] and list(plan.input_schema["properties"]) == ["input"]


# --------------------------------------------------------------------------------------------
# workflow


def test_references_become_jinja():
    assert to_jinja("${x}") == "{{x}}"
    assert to_jinja({"a": ["${ a.b }", "pre ${c[0]} post"], "n": 3}) == {"a": ["{{a.b}}", "pre {{c[0]}} post"], "n": 3}


def test_condition_shapes():
    assert lower_condition({"a.b": {"$eq": True}}) == ({"==": [{"var": "a.b"}, True]}, [])
    assert lower_condition({"$eq": {"a": "x"}}) == ({"==": [{"var": "a"}, "x"]}, [])
    assert lower_condition({"a": 3}) == ({"==": [{"var": "a"}, 3]}, [])  # MongoDB-style equality
    ops = {"$ne": "!=", "$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<=", "$in": "in"}
    for op, logic in ops.items():
        assert lower_condition({"v": {op: 1}})[0] == {logic: [{"var": "v"}, 1]}
    assert lower_condition({"v": {"$nin": [1, 2]}})[0] == {"!": {"in": [{"var": "v"}, [1, 2]]}}
    when, rx = lower_condition({"$regexp": {"name": "^a"}, "n": {"$gt": 1, "$lt": 5}})
    assert when == {"and": [{">": [{"var": "n"}, 1]}, {"<": [{"var": "n"}, 5]}]}
    assert rx == [{"var": "name", "pattern": "^a"}]
    assert lower_condition({"v": {"$eq": "${other}"}})[0] == {"==": [{"var": "v"}, {"var": "other"}]}
    _, problems = condition_clauses({"v": {"$like": 1}, "$bad": {"x": 1}})
    assert [p.code for p in problems] == ["guard-invalid", "guard-invalid"]


def test_workflow_vars_that_runs_may_override_keep_the_type_of_their_value():
    """A literal var is a run input with its value as default: an input of another JSON type is
    refused when the run starts, not passed on to fail later (the soundness property test found a
    run started with `categories: true` that a child workflow could not take)."""
    from jsonschema import Draft202012Validator

    ws = workspace_from_texts({"wf.yaml": """
kind: workflow
name: typed_vars
input_schema: {type: object, properties: {who: {type: string}}}
vars:
  categories: [contract, invoice]
  greeting: Hello
  limit: 3
  ratio: 0.5
  strict: true
  options: {depth: 2, tags: [a]}
  mixed: [1, two]
  empty: []
  nothing: null
  who: nobody
  said: ""
steps:
  - {name: log, params: {message: "${greeting} ${categories}"}, output: said}
"""})
    plan = compile_plan(ws, "typed_vars")
    props = plan.input_schema["properties"]
    assert props["categories"]["type"] == "array" and props["categories"]["items"] == {"type": "string"}
    assert props["greeting"]["type"] == "string" and props["limit"]["type"] == "integer"
    assert props["ratio"]["type"] == "number" and props["strict"]["type"] == "boolean"
    assert props["options"]["type"] == "object" and props["options"]["properties"]["tags"]["items"] == {"type": "string"}
    assert props["mixed"]["type"] == "array" and "items" not in props["mixed"], "no one type for mixed items"
    assert props["empty"]["type"] == "array" and "items" not in props["empty"]
    assert props["nothing"]["type"] == "null", "a var takes values of its literal's type: a null, null"
    assert props["who"]["type"] == "string", "a var that is also a declared input keeps its declared schema"
    assert plan.context_schema["properties"]["said"] == {}, "a var a step writes is not typed by its default"
    valid = Draft202012Validator(plan.input_schema).is_valid
    assert valid({"categories": ["report"], "limit": 4, "ratio": 1, "nothing": None})
    # a value of another type for a null var: what the checker takes `${nothing}` to be would be
    # wrong (a step given it as a text parameter failed a run that checked clean)
    for wrong in ({"categories": True}, {"categories": [1]}, {"greeting": None}, {"limit": 2.5}, {"strict": "yes"},
                  {"options": []}, {"nothing": {"any": "thing"}}):
        assert not valid(wrong), wrong


def test_workflow_lowering():
    ws = _ws()
    pipeline, extras = lower_workflow(ws.get("intake", "workflow"))
    ids = list(pipeline.nodes)
    assert ids == ["_vars", "setStatus", "extractText", "child_flow", "child_flow_2", "describe", "log", "setStatus_2", "_join"]
    n = pipeline.nodes
    # literal vars are the initial context; a var with references is computed first
    assert pipeline.context.initial == {"names": {"extract": "sys:ExtractInformation"}, "who": "nobody"}
    assert isinstance(n["_vars"], ToolNode) and n["_vars"].tool == "set_context"
    assert n["_vars"].input == {"updates": {"greeting": "Hello {{who}}"}} and n["_vars"].writes == ["greeting"]
    # inputs are required unless a var gives them a default
    assert pipeline.context.schema_["required"] == ["documentId"]
    assert pipeline.context.schema_["properties"]["extracted"] == {}
    # the chain: each step needs the previous awaited one; the async child only feeds the join
    assert n["setStatus"].needs == ["_vars"]
    assert n["extractText"].needs == ["setStatus"]
    assert n["child_flow_2"].needs == ["child_flow"]
    assert n["describe"].needs == ["child_flow"]
    assert n["_join"].needs == ["setStatus_2", "child_flow_2"] and n["_join"].tool == "noop"
    # activities
    ex = n["extractText"]
    assert ex.tool == "extractText" and ex.output == "extracted" and ex.writes == ["extracted"]
    assert ex.input == {"document": "{{documentId}}", "note": "doc {{documentId}}!"}
    # child workflows
    child = n["child_flow"]
    assert isinstance(child, ProcessNode) and child.process == "child_flow"
    assert child.input == {"text": "{{extracted.text}}"} and child.writes == ["classification"]
    assert child.returns.from_ == "context"
    assert child.when == {"==": [{"var": "extracted.hasText"}, True]}
    # conditions, projection, fetch
    assert n["describe"].when == {"and": [
        {"in": [{"var": "who"}, ["a", "b"]]}, {">": [{"var": "extracted.size"}, 10]}, {"<=": [{"var": "extracted.size"}, 100]},
    ]}
    assert extras["describe"]["projection"] == {"$include": ["name", "description"]}
    assert extras["describe"]["fetch"] == {"type": "document", "query": {"id": "{{documentId}}"}}
    assert extras["log"]["when_regexp"] == [{"var": "greeting", "pattern": "^Hello"}] and n["log"].when is None
    assert all(e["skip_propagates"] is False for e in extras.values())
    # writes ⊆ properties
    props = pipeline.context.schema_["properties"]
    assert all(w in props for node in n.values() for w in node.writes)


def test_workflow_plan_carries_extras():
    plan = compile_plan(_ws(), "intake")
    assert plan.kind == "workflow" and plan.control == "dag"
    assert plan.nodes["describe"].extras["projection"] == {"$include": ["name", "description"]}
    assert plan.nodes["describe"].skip_propagates is False
    assert "skip_propagates" not in plan.nodes["describe"].extras
    assert plan.context_initial["who"] == "nobody"
    assert plan.input_schema["required"] == ["documentId"]


@pytest.mark.parametrize("name", ["deal_review", "intake", "child_flow"])
def test_lowered_pipelines_pass_every_check(name):
    ws = _ws()
    unit = next(u for u in ws.units if u.name == name)
    pipeline, _ = lower(unit.defn, _forms(ws))
    assert unit_findings(_lowered_unit(unit, pipeline), ws) == []


def test_lowered_definitions_pass_every_check():
    folder = ROOT / "definitions"
    if not folder.is_dir():
        pytest.skip("no definitions folder")
    ws = load_workspace([folder])
    lowered = [u for u in ws.units if u.kind in ("template", "workflow") and u.defn is not None]
    for unit in lowered:
        if unit_findings(unit, ws):
            continue  # an invalid source is the checks' business, not the lowering's
        pipeline, _ = lower(unit.defn, _forms(ws))
        assert unit_findings(_lowered_unit(unit, pipeline), ws) == [], unit.file


# --------------------------------------------------------------------------------------------
# golden fixtures of the lowered_kinds pass


def _expected(path: Path) -> list[str]:
    return [line.strip() for line in path.read_text().splitlines() if line.strip()]


@pytest.mark.parametrize("fixture", sorted(FIXTURES.glob("lk_*.yaml")), ids=lambda p: p.stem)
def test_lowered_kinds_fixtures(fixture, monkeypatch):
    # like `ergon check FILE`, with definitions/ as context; the other fixtures are left out (the
    # lk_ fixtures are self-contained, and a broken neighbour must not break these tests)
    monkeypatch.chdir(ROOT)
    ws = load_workspace([fixture], context_dirs=[ROOT / "definitions"])
    got = [f"{d.code} {d.line}:{d.col}" for d in check_workspace(ws).diagnostics]
    assert got == _expected(fixture.with_suffix(".expected"))


CONDITIONAL = """\
kind: workflow
name: conditional_reads
vars: {flag: true}
steps:
  - name: noop
    condition: {flag: {$eq: true}}
    output: maybe
  - name: log
    condition: {flag: {$eq: true}}
    params: {message: "${maybe}"}
  - name: log
    condition: {maybe: {$ne: null}}
    params: {message: "${maybe}"}
"""


def test_reading_the_output_of_a_conditional_step():
    ws = workspace_from_texts({"c.yaml": CONDITIONAL})
    found = [(d.code, d.path) for d in check_workspace(ws).diagnostics]
    # same condition as the setter: fine; a different one: maybe unset (the condition itself may read it)
    assert found == [("maybe-unset", "steps[2].params.message")]


JAVASCRIPT_STEP = """\
kind: workflow
name: js_step
input_schema: {type: object, properties: {invoices: {type: array}}}
steps:
  - name: runJavascriptCode
    params:
      code: "`${invoices.length} invoices`"
      data: {invoices: "${invoices}"}
    output: summary
"""


def test_javascript_code_is_passed_as_written_while_its_data_are_interpolated():
    ws = workspace_from_texts({"js_step.yaml": JAVASCRIPT_STEP})
    assert check_workspace(ws).errors == []  # the code's `${…}` is JavaScript's, not a workflow reference
    node = compile_plan(ws, "js_step").nodes["runJavascriptCode"]
    assert node.body_as(ToolNode).input == {"code": "`${invoices.length} invoices`", "data": {"invoices": "{{invoices}}"}}
    assert node.verbatim_inputs() == {"code"}


def test_a_var_of_an_object_value_is_typed_by_its_whole_shape():
    # a run input replacing the var keeps the value's shape: `${title.kind}` reads a required member
    from compiler.lower import value_schema

    assert value_schema({"kind": "x", "owner": {"name": "Ada"}}) == {
        "type": "object", "required": ["kind", "owner"],
        "properties": {"kind": {"type": "string"},
                       "owner": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}}}
