"""``ergon test`` and agent nodes: a case gives an agent's final answer in ``mocks.interactions``
under the node's interaction (``sys:ProcessAgentNode`` by default), and ``expect.calls`` counts
the agent's visits whether mocked or not.

The process, written into the shop project: ``triage`` (an agent writing ``priority``) →
``route`` (a condition) → ``urgent`` or ``normal``.
"""

from __future__ import annotations

from pathlib import Path

from flows.testing.runner import run_tests

TRIAGE = """\
format_version: 1
kind: process
process: triage_order
initial: triage
context:
  schema:
    type: object
    properties:
      order_id: {type: string}
      priority: {type: string, enum: [low, high]}
    required: [order_id]
nodes:
  triage:
    type: agent
    prompt: "Rate the priority of order {{ order_id }}."
    writes: [priority]
    transitions: [{to: route}]
  route:
    type: condition
    branches:
      - {to: urgent, when: {"==": [{var: priority}, high]}}
      - {to: normal, default: true}
  urgent:
    type: final
  normal:
    type: final
"""


def _run(project: Path, write_test, cases: str):
    (project / "definitions" / "triage_order.yaml").write_text(TRIAGE)
    try:
        path = write_test("definition: triage_order\ncases:\n" + cases, name="triage_order.test.yaml")
        return run_tests([path])
    finally:
        (project / "definitions" / "triage_order.yaml").unlink()


def test_a_mocked_agent_answers_each_visit_without_running_its_loop(project, write_test) -> None:
    session = _run(project, write_test, """\
  - name: the agent rates it high
    inputs: {order_id: A-1}
    mocks:
      interactions:
        sys:ProcessAgentNode: {returns: {priority: high}}
    expect: {status: completed, outcome: urgent, context: {priority: high}, calls: {sys:ProcessAgentNode: 1}}
  - name: the agent rates it low
    inputs: {order_id: A-1}
    mocks:
      interactions:
        sys:ProcessAgentNode: [{returns: {priority: low}}]
    expect: {status: completed, outcome: normal, route: [triage, route, normal]}
""")
    assert not session.problems, [d.format() for d in session.problems]
    assert [r.passed for r in session.results] == [True, True], [r.differences for r in session.results]


def test_a_mocked_agent_failure_fails_the_node_as_a_model_failure_does(project, write_test) -> None:
    session = _run(project, write_test, """\
  - name: the model is down
    inputs: {order_id: A-1}
    mocks:
      interactions:
        sys:ProcessAgentNode: {raises: model endpoint unavailable}
    expect: {status: failed, error: model endpoint unavailable, route: [triage]}
""")
    assert not session.problems, [d.format() for d in session.problems]
    (result,) = session.results
    assert result.passed, (result.differences, result.actual.error)
    assert "agent `triage`" in (result.actual.error or "")


def test_an_unmocked_agent_visit_is_counted(project, write_test) -> None:
    session = _run(project, write_test, """\
  - name: the offline model rates it
    inputs: {order_id: A-1}
    expect: {status: completed, calls: {sys:ProcessAgentNode: 1}}
""")
    assert not session.problems, [d.format() for d in session.problems]
    (result,) = session.results
    assert result.passed, (result.differences, result.actual.error)


def test_an_agent_answer_that_does_not_fit_its_writes_is_refused_by_the_check(project, write_test) -> None:
    session = _run(project, write_test, """\
  - name: a priority the schema does not allow
    inputs: {order_id: A-1}
    mocks:
      interactions:
        sys:ProcessAgentNode: {returns: {priority: urgent}}
""")
    (problem,) = session.problems
    assert problem.code == "mock-result", problem.format()
    assert problem.line == 7, problem.format()
    assert not session.results
