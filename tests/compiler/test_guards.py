"""compiler.guards (JSON Logic via datalogic-py) and the `guards` pass."""

from __future__ import annotations

from decimal import Decimal

import pytest

from compiler import check_workspace, workspace_from_texts
from compiler.guards import check_rule, evaluate, pointer_to_path, rule_reads, rule_required_reads, var_sites


def diags(text: str, *codes: str):
    report = check_workspace(workspace_from_texts({"g.yaml": text}))
    return [d for d in report.diagnostics if d.code in codes]


RISK = {"or": [{">": [{"var": "total_value"}, 50000]}, {"==": [{"var": "has_critical_flag"}, True]}]}


def test_check_rule_reports_pointer_code_message():
    assert check_rule(RISK) == []
    problems = check_rule({"or": [{"nosuch": [1]}, {">": [1]}]})
    assert [(p, c) for p, c, _ in problems] == [("/or/0", "UnknownOperator"), ("/or/1", "ArgumentCount")]
    assert check_rule("apple") == []  # a string rule is JSON text for datalogic: passed as json.dumps


def test_rule_reads():
    assert rule_reads(RISK) == {"total_value", "has_critical_flag"}
    rule = {"and": [{"var": ["x", 1]}, {"missing": ["zz"]}, {"map": [{"var": "items"}, {"var": "price"}]},
                    {"==": [{"var": "a.b.c"}, 1]}]}
    assert rule_reads(rule) == {"x", "zz", "items", "a"}
    # a default or an absence test tolerates an unset field; `price` is the item, not the context
    assert rule_required_reads(rule) == {"items", "a"}
    assert [(at, name) for at, name, _ in var_sites({"or": [{"var": "q"}]})] == [(("or", 0, "var"), "q")]


def test_pointer_to_path():
    assert pointer_to_path("/or/0") == ("or", 0)
    assert pointer_to_path("") == ()
    assert pointer_to_path("/some/1/==/1", {"some": [{"var": "l"}, {"==": [1, 2]}]}) == ("some", 1, "==", 1)
    assert pointer_to_path("/a~1b/0") == ("a/b", 0)


def test_evaluate():
    assert evaluate(RISK, {"total_value": 60000}) is True
    assert evaluate(RISK, {"total_value": 10, "has_critical_flag": False}) is False
    assert evaluate({">": [{"var": "x"}, 1]}, {"x": Decimal("2.5")}) is True  # JSON-normalised
    assert evaluate({"var": "x"}, {"x": []}) is False  # JSON Logic truthiness
    assert evaluate(True, {}) is True


PROCESS = """\
format_version: 1
process: g
initial: review
context:
  schema:
    type: object
    properties:
      doc_id: {type: string}
      decision: {type: string, enum: [approve, reject]}
      channel: {type: string}
      score: {type: number}
    required: [doc_id]
    # ROUTE
nodes:
  review:
    type: human_task
    writes: [decision, channel, score]
    task:
      title: "Review {{doc_id}}"
      fields:
        - {name: decision, type: select, options: [approve, reject]}
        - {name: channel, type: select, options: [email, phone]}
        - {name: score, type: number}
    transitions:
      - {to: route, guard: GUARD}
      - {to: done}
  route:
    type: condition
    branches:
      - {to: done, when: WHEN}
      - {to: done, default: true}
  done: {type: final}
"""


def process(guard='{"==": [{var: decision}, approve]}', when='{"==": [{var: channel}, email]}'):
    return PROCESS.replace("GUARD", guard).replace("WHEN", when)


def test_clean_process_has_no_guard_findings():
    assert diags(process(), "guard-invalid", "enum-value", "unknown-field") == []


def test_guard_invalid_points_inside_the_rule():
    found = diags(process(guard='{or: [{"=~": [{var: score}, 1]}, {">": [{var: score}]}]}'), "guard-invalid")
    assert [(d.path, d.line) for d in found] == [
        ("nodes.review.transitions[0].guard.or[0]", 25),
        ("nodes.review.transitions[0].guard.or[1]", 25),
    ]
    assert found[0].message == "unknown operator `=~`" and "operators are" in found[0].hint
    assert "at least 2" in found[1].message


def test_guard_invalid_did_you_mean_operator_and_constant_guard():
    found = diags(process(when='{"and": [{"var": "score"}, {"inn": [1, [1]]}]}'), "guard-invalid")
    assert [d.path for d in found] == ["nodes.route.branches[0].when.and[1]"]
    assert found[0].hint == "did you mean `in`?"
    found = diags(process(guard='"decision == approve"'), "guard-invalid")
    assert [d.path for d in found] == ["nodes.review.transitions[0].guard"]
    assert "not a str" in found[0].message


def test_enum_value_schema_enum_and_select_options():
    found = diags(process(guard='{"==": [{var: decision}, approved]}'), "enum-value")
    assert [(d.path, d.line, d.col) for d in found] == [("nodes.review.transitions[0].guard.==[1]", 25, 53)]
    assert found[0].hint == 'did you mean `"approve"`?'
    # literal first, `!=`, `in` with a list: every literal is checked
    found = diags(process(guard='{in: [{var: decision}, [approve, maybe]]}'), "enum-value")
    assert [d.path for d in found] == ["nodes.review.transitions[0].guard.in[1][1]"]
    found = diags(process(guard='{"!=": [nope, {var: decision}]}'), "enum-value")
    assert [d.path for d in found] == ["nodes.review.transitions[0].guard.!=[0]"]
    # `channel` has no schema enum, but the task's select limits it on the task's transitions
    found = diags(process(guard='{"==": [{var: channel}, fax]}'), "enum-value")
    assert len(found) == 1 and "options of the task field" in found[0].message and "`email`" not in found[0].hint
    assert found[0].hint == 'valid values are: "email", "phone"'
    # ... but not on a later condition (another node could have written it)
    assert diags(process(when='{"==": [{var: channel}, fax]}'), "enum-value") == []


def test_enum_value_respects_json_types():
    text = process(guard='{"==": [{var: flag}, 1]}').replace(
        "score: {type: number}\n    required", "score: {type: number}\n      flag: {enum: [true, false]}\n    required")
    assert len(diags(text, "enum-value")) == 1  # 1 is not true in JSON


def test_unknown_field_in_guard_with_did_you_mean():
    found = diags(process(when='{">": [{var: scor}, 3]}'), "unknown-field")
    assert [(d.path, d.line) for d in found] == [("nodes.route.branches[0].when.>[0].var", 30)]
    assert found[0].hint == "did you mean `score`?"


def test_pipeline_when_is_checked():
    text = """\
kind: pipeline
name: p
context:
  schema: {type: object, properties: {mode: {type: string, enum: [fast, slow]}}, required: [mode]}
nodes:
  a:
    type: tool
    tool: noop
    when: {"==": [{var: mode}, quick]}
"""
    found = diags(text, "enum-value", "guard-invalid")
    assert [(d.code, d.path) for d in found] == [("enum-value", "nodes.a.when.==[1]")]


@pytest.mark.parametrize("guard", ["[1, 2]", "3", "{a: 1, b: 2}"])
def test_odd_guards_never_raise(guard):
    assert diags(process(guard=guard), "guard-invalid")


# --------------------------------------------------------------------------------------------
# the `artifact_exists` extension

def test_artifact_exists_is_accepted_and_reads_no_context_field():
    from compiler import guards as g

    rule = {"and": [{"artifact_exists": {"var": "out/report.md"}}, {"==": [{"var": "x"}, 1]}]}
    assert g.check_rule(rule) == []
    assert g.rule_reads(rule) == {"x"} and g.rule_required_reads(rule) == {"x"}
    assert g.check_rule({"artifact_exists": "report"}) == []
    (problem,) = g.check_rule({"artifact_exists": 3})
    assert problem[0] == "/artifact_exists" and "artifact key" in problem[2]


def test_artifact_exists_evaluates_against_the_keys_it_is_given():
    from compiler import guards as g

    rule = {"artifact_exists": {"var": "out/report.md"}}
    assert g.evaluate(rule, {}, lambda: ["out/report.md", "plan"]) is True
    assert g.evaluate(rule, {}, lambda: ["plan"]) is False
    assert g.evaluate(rule, {}) is False  # no artifacts given: none exist
    asked: list[int] = []
    assert g.evaluate({"==": [{"var": "x"}, 1]}, {"x": 1}, lambda: asked.append(1) or []) is True
    assert asked == []  # a rule without the extension never asks for the keys


def test_artifact_exists_guard_checks_clean_in_a_process():
    text = """\
    format_version: 1
    process: p
    initial: start
    context:
      schema: {type: object, properties: {x: {type: integer}}}
    nodes:
      start:
        type: tool
        tool: write_artifact
        input: {key: report.md, content: hi}
        transitions:
          - {to: done, guard: {artifact_exists: {var: report.md}}}
          - {to: other}
      other: {type: final}
      done: {type: final}
    """
    from checking import diagnostics

    assert diagnostics(text) == []


def test_artifact_exists_with_a_computed_argument_is_guard_invalid_with_a_hint():
    text = """\
    format_version: 1
    process: p
    initial: start
    nodes:
      start:
        type: tool
        tool: think
        input: {thought: hi}
        transitions:
          - {to: done, guard: {artifact_exists: {var: 3}}}
          - {to: done}
      done: {type: final}
    """
    from checking import diagnostics

    (d,) = diagnostics(text, ("guard-invalid",))
    assert d.path == "nodes.start.transitions[0].guard.artifact_exists"
    assert '{"artifact_exists": {"var": "out/report.md"}}' in d.hint
    (typo,) = diagnostics(text.replace("{artifact_exists: {var: 3}}", '{artifact_exist: {var: "r"}}'), ("guard-invalid",))
    assert typo.hint == "did you mean `artifact_exists`?"


@pytest.mark.parametrize("rule, data", [
    ({">=": [{"var": "m"}, -1.25]}, {"m": "abc"}),
    ({"==": [{"var": "m"}, 3]}, {"m": [1]}),
    ({"<": [{"var": "m"}, 3]}, {"m": {"x": 1}}),
])
def test_a_comparison_of_values_that_are_no_numbers_is_false(rule, data):
    # JSON Logic's reference semantics (JavaScript's): NaN compares false; the engine throws
    assert evaluate(rule, data) is False
    assert evaluate({">": [{"var": "m"}, 3]}, {"m": "5"}) is True  # a numeric string still compares as a number
