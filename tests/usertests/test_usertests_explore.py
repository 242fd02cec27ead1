"""``ergon test --explore N``: generated inputs through each definition under test, reporting the
runs that fail with a fault of the definition (or of Ergon), with the input that caused it.

``quote`` prices an order with a project tool that answers text instead of a number for amounts
of 1000 and more, which the context's schema refuses: a ``definition`` error some drawn inputs
reach. A person then signs the quote off (a human task), answered with drawn valid answers.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from flows.cli import run
from flows.testing.explore import CannotDraw, answer_schema, draw_valid, explore
from flows.testing.runner import run_tests

QUOTE = """\
format_version: 1
kind: process
process: quote
initial: price
context:
  schema:
    type: object
    properties:
      amount: {type: number, minimum: 0}
      price: {type: number}
      decision: {type: string}
      notes: {type: string}
    required: [amount]
nodes:
  price:
    type: tool
    tool: quote_price
    input: {amount: "{{ amount }}"}
    writes: [price]
    transitions: [{to: signoff}]
  signoff:
    type: human_task
    task:
      title: "Sign off the quote of {{ price }}"
      fields:
        - {name: decision, type: select, required: true, options: [send, drop]}
        - {name: notes, type: text, required: true}
    writes: [decision, notes]
    transitions: [{to: done}]
  done:
    type: final
"""

TOOL = '''\
from flows.tools import tool


@tool
def quote_price(amount: float) -> dict:
    """Prices below 1000 are computed; from 1000 on the tool answers text the context refuses."""
    return {"price": round(amount * 1.2, 2) if amount < 1000 else "ask sales"}
'''

TEST = """\
definition: quote
cases:
  - name: a small order is priced
    inputs: {amount: 10}
    mocks: {tasks: {signoff: {answer: {decision: send, notes: ok}}}}
    expect: {outcome: done, context: {price: 12}}
"""


@pytest.fixture
def quote_project(project: Path, write_test):
    (project / "definitions" / "quote.yaml").write_text(QUOTE)
    (project / "definitions" / "tools" / "quote.py").write_text(TOOL)
    write_test(TEST, name="quote.test.yaml")
    yield project
    (project / "definitions" / "quote.yaml").unlink()
    (project / "definitions" / "tools" / "quote.py").unlink()


def test_explore_reports_each_definition_fault_with_its_input_and_exits_1(quote_project, capsys) -> None:
    assert run(["test", "definitions/tests/quote.test.yaml", "--explore", "12", "--seed", "5"]) == 1
    printed = capsys.readouterr()
    assert "explore: 12 generated run(s) per definition, seed 5 (replay: --explore 12 --seed 5)" in printed.out
    assert "FOUND quote run" in printed.out
    assert "ended failed with a definition error at `price`" in printed.out
    assert "price: 'ask sales' is not of type 'number'" in printed.out
    assert "inputs: {\"amount\": " in printed.out
    assert "Traceback" not in printed.out + printed.err


def test_junit_xml_has_a_suite_of_the_explored_runs_with_a_failure_per_finding(quote_project, tmp_path, capsys) -> None:
    import xml.etree.ElementTree as ET

    report = tmp_path / "junit.xml"
    assert run(["test", "definitions/tests/quote.test.yaml", "--explore", "12", "--seed", "5", "--junit", str(report)]) == 1
    capsys.readouterr()
    root = ET.parse(report).getroot()
    cases_suite, explored = root.findall("testsuite")
    assert cases_suite.get("name") == "definitions/tests/quote.test.yaml" and cases_suite.get("failures") == "0"
    assert explored.get("name") == "explore: quote (seed 5)" and explored.get("tests") == "12"
    runs = explored.findall("testcase")
    assert [c.get("name") for c in runs] == [f"run {n}" for n in range(1, 13)]
    failures = [c.find("failure") for c in runs if c.find("failure") is not None]
    assert failures and explored.get("failures") == str(len(failures))
    assert root.get("tests") == str(1 + 12) and root.get("failures") == str(len(failures))
    first = failures[0]
    assert first is not None and first.get("type") == "definition"
    assert "at `price`" in (first.get("message") or "")
    assert "'ask sales' is not of type 'number'" in (first.text or "") and "inputs: {\"amount\": " in (first.text or "")
    assert "replay: 5:quote:" in (first.text or "")


def test_the_seed_replays_every_run_and_findings_are_the_large_amounts(quote_project) -> None:
    session = run_tests(["definitions/tests/quote.test.yaml"])
    assert session.catalog is not None and not session.problems
    first = explore(session.plans, session.catalog, 12, 5)
    again = explore(session.plans, session.catalog, 12, 5)
    assert [(r.inputs, r.status, r.error) for r in first.runs] == [(r.inputs, r.status, r.error) for r in again.runs]
    assert first.findings, "12 runs with amounts spread over magnitudes reach 1000"
    for r in first.runs:
        assert r.inputs is not None
        if r.inputs["amount"] >= 1000:
            assert r.finding and r.error_kind == "definition" and r.node == "price"
        else:  # the person's task was answered with a drawn valid answer: the run completed
            assert r.status == "completed", (r.inputs, r.status, r.error)
    other = explore(session.plans, session.catalog, 12, 6)
    assert [r.inputs for r in other.runs] != [r.inputs for r in first.runs]


def test_a_definition_whose_runs_fail_only_on_the_world_has_no_finding(project, write_test, capsys) -> None:
    # the shop's price service is never reachable: a `world` failure, not the definition's fault
    write_test("""\
        definition: order_check
        cases:
          - name: any
            inputs: {order_id: o-1, amount: 40}
            mocks: {tools: {lookup_price: {returns: {price: 1}}}, interactions: {rate_order: {returns: {priority: low}}}}
            expect: {outcome: approved}
        """)
    assert run(["test", "--explore", "5", "--seed", "1", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["explore"]["seed"] == 1 and document["explore"]["runs"] == 5
    assert document["explore"]["findings"] == []


def test_drawn_values_fit_their_schema() -> None:
    schema = {
        "type": "object",
        "$defs": {"line": {"type": "object", "properties": {"id": {"type": "string", "minLength": 3},
                                                            "n": {"type": "integer", "minimum": 2, "maximum": 4}},
                           "required": ["id", "n"]}},
        "properties": {
            "lines": {"type": "array", "items": {"$ref": "#/$defs/line"}, "minItems": 1, "maxItems": 1000},
            "kind": {"enum": ["a", "b"]}, "when": {"type": "string", "format": "date"},
            "maybe": {"type": ["number", "null"], "exclusiveMaximum": 0}, "code": {"type": "string", "pattern": "^[a-z]"},
            "either": {"anyOf": [{"type": "boolean"}, {"const": 7}]},
        },
        "required": ["lines", "kind", "when", "maybe", "code", "either"],
        "additionalProperties": False,
    }
    from jsonschema import Draft202012Validator

    rng = random.Random(0)
    for _ in range(50):
        value = draw_valid(rng, schema, schema["$defs"])
        assert Draft202012Validator(schema).is_valid(value), value
        assert len(value["lines"]) <= 5  # a few items, whatever maxItems allows
    answer = draw_valid(rng, answer_schema([{"name": "ok", "type": "boolean", "required": True},
                                            {"name": "why", "type": "text", "required": True}]))
    assert isinstance(answer["ok"], bool) and answer["why"].strip()
    with pytest.raises(CannotDraw):
        draw_valid(rng, {"type": "string", "pattern": "^[0-9]{5}$"})
