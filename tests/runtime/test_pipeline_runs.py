"""Pipeline (DAG) runs: parallel starts, `when` skips, failure handling."""

from __future__ import annotations

import pytest

from testing_tools import marks

pytestmark = pytest.mark.prefect

PIPELINE = """
kind: pipeline
name: {name}
context:
  schema:
    type: object
    properties:
      go: {{type: boolean}}
      last: {{type: string}}
      left: {{type: string}}
      right: {{type: string}}
      joined: {{type: string}}
  initial: {{go: true}}
nodes:
{nodes}
"""


def pipeline(name: str, nodes: str) -> str:
    return PIPELINE.format(name=name, nodes=nodes)


def visits_by_node(run_id: str) -> dict:
    from flows.store import visits as visit_store

    return {v.node_id: v for v in visit_store.visits_for_run(run_id)}


def test_independent_nodes_run_in_parallel_and_join(run_def):
    text = pipeline("diamond", """
  root: {type: tool, tool: mark, input: {name: root}}
  left: {type: tool, tool: mark, input: {name: left, seconds: 0.4}, needs: [root], output: left, writes: [left]}
  right: {type: tool, tool: mark, input: {name: right, seconds: 0.4}, needs: [root], output: right, writes: [right]}
  join:
    type: tool
    config: {context_update: {joined: "{{ left.last }}+{{ right.last }}"}}
    needs: [left, right]
    writes: [joined]
""")
    text = text.replace("left: {type: string}", "left: {type: object}").replace("right: {type: string}", "right: {type: object}")
    result = run_def({"diamond.yaml": text}, "diamond")
    assert result["status"] == "completed", result
    assert result["context"]["joined"] == "left+right"
    v = visits_by_node(result["run_id"])
    assert v["left"].started_at < v["right"].ended_at and v["right"].started_at < v["left"].ended_at, "left and right overlap"
    assert v["join"].started_at >= max(v["left"].ended_at, v["right"].ended_at)
    assert marks()[0] == "root" and marks()[-1] != "root"


def test_when_false_skips_the_node_and_its_dependents(run_def):
    text = pipeline("skipper", """
  first: {type: tool, tool: mark, input: {name: first}}
  gated: {type: tool, tool: mark, input: {name: gated}, needs: [first], when: {"!": [{var: go}]}}
  after_gate: {type: tool, tool: mark, input: {name: after_gate}, needs: [gated]}
  other: {type: tool, tool: mark, input: {name: other}, needs: [first]}
""")
    result = run_def({"skipper.yaml": text}, "skipper")
    assert result["status"] == "completed", result
    v = visits_by_node(result["run_id"])
    assert v["gated"].status == "skipped" and "when" in v["gated"].error
    assert v["after_gate"].status == "skipped" and "gated" in v["after_gate"].error
    assert v["other"].status == "completed"
    assert sorted(marks()) == ["first", "other"]


def test_failure_fails_dependents_after_in_flight_nodes_finish(run_def):
    text = pipeline("breaks", """
  root: {type: tool, tool: mark, input: {name: root}}
  bad: {type: tool, tool: double_unless, input: {value: 1, bad: 1}, needs: [root]}
  slow: {type: tool, tool: mark, input: {name: slow, seconds: 0.5}, needs: [root]}
  after_bad: {type: tool, tool: mark, input: {name: after_bad}, needs: [bad]}
""")
    result = run_def({"breaks.yaml": text}, "breaks")
    assert result["status"] == "failed"
    assert "node `bad` failed" in result["error"]
    v = visits_by_node(result["run_id"])
    assert v["slow"].status == "completed", "the node in flight was allowed to finish"
    assert v["after_bad"].status == "failed" and "upstream" in v["after_bad"].error
    assert "after_bad" not in marks()
