"""``prefect: true``: a case that runs through the real Prefect flow, as ``ergon run`` runs one.

The shop project's ``order_check`` (see ``conftest.py``) on the session's local Prefect server:
the flow run exists in Prefect with a task run per visit, the case's tool and interaction
stand-ins still answer inside those task runs, a human task the case answers is answered through
the path ``ergon tasks answer`` takes (the paused flow run is resumed by Prefect), and a task it
does not answer ends the case ``paused`` — the run is then cancelled, so nothing waits.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from flows.testing.runner import run_tests

pytestmark = pytest.mark.prefect

MOCKED = """\
    mocks:
      tools:
        lookup_price: {returns: {price: 12.5}}
      interactions:
        rate_order: {returns: {priority: %s}}
"""


def _case(name: str, priority: str, rest: str = "", *, prefect: str = "true") -> str:
    return (f"  - name: {name}\n    prefect: {prefect}\n    inputs: {{order_id: o-1, amount: 40}}\n"
            + MOCKED % priority + rest)


def _flow_run(flow_run_id: str) -> Any:
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        return client.read_flow_run(flow_run_id)


def _states(flow_run_id: str) -> list[str]:
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        return [s.type.value for s in client.read_flow_run_states(flow_run_id)]


def _task_runs(flow_run_id: str, wanted: set[str]) -> dict[str, str]:
    """The flow run's task runs, by name → state; Prefect records them from the events its client
    sends, a moment after the flow ends, so they are read until ``wanted`` are all there."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    deadline = time.monotonic() + 30
    while True:
        with get_client(sync_client=True) as client:
            rows = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id])))
        found = {t.name: t.state_type.value if t.state_type else "" for t in rows}
        if wanted <= set(found) or time.monotonic() > deadline:
            return found
        time.sleep(0.3)


def test_a_case_on_prefect_runs_as_a_flow_run_whose_visits_are_task_runs(prefect_api, write_test) -> None:
    path = write_test("definition: order_check\ncases:\n" + _case("a small order is approved on Prefect", "low", """\
    expect:
      status: completed
      outcome: approved
      route: [price, rate, route, auto, approved]
      context: {price: 12.5, priority: low, decision: approve}
      calls: {lookup_price: 1, rate_order: 1}
"""))
    session = run_tests([path])
    assert not session.problems, session.problems
    [result] = session.results
    assert result.passed, result.differences
    # the run's flow run is in Prefect, named after the run, and each visit is a task run of it
    assert result.prefect_flow_run_id
    flow_run = _flow_run(result.prefect_flow_run_id)
    assert flow_run.name == result.run_id
    assert flow_run.state.type.value == "COMPLETED"
    task_runs = _task_runs(result.prefect_flow_run_id, {"price", "rate", "route", "auto"})
    assert {"price", "rate", "route", "auto"} <= set(task_runs), task_runs
    assert task_runs["price"] == "COMPLETED", task_runs  # the mocked tool answered inside the task run


def test_a_task_the_case_answers_resumes_the_paused_flow_run(prefect_api, write_test) -> None:
    path = write_test("definition: order_check\ncases:\n" + _case("sales approves a rush order", "high", """\
      tasks:
        review: {answer: {decision: approve, notes: fine}, as: bob}
    expect:
      status: completed
      outcome: approved
      route: [price, rate, route, review, approved]
      context: {decision: approve, notes: fine}
"""))
    session = run_tests([path])
    [result] = session.results
    assert result.passed, result.differences
    states = _states(result.prefect_flow_run_id)
    # the flow run paused for the task, and the answer resumed it
    assert "PAUSED" in states and states[-1] == "COMPLETED", states
    assert states.index("PAUSED") < len(states) - 1 and "RUNNING" in states[states.index("PAUSED"):], states
    task_runs = _task_runs(result.prefect_flow_run_id, {"review"})
    assert task_runs.get("review") == "COMPLETED", task_runs


def test_a_task_the_case_does_not_answer_ends_it_paused_and_the_flow_run_is_not_left_waiting(
        prefect_api, write_test) -> None:
    path = write_test("definition: order_check\ncases:\n" + _case("a rush order waits for sales", "high", """\
    expect:
      status: paused
      route: [price, rate, route, review]
      context: {priority: high}
      error: the human task of `review` waits for a person
""") + _case("an answer by someone outside sales is refused", "high", """\
      tasks:
        review: {answer: {decision: approve}, as: bob}
    people: {bob: [finance]}
    expect:
      status: paused
      refused: [review]
      error: the answer of `bob` was refused
"""))
    session = run_tests([path])
    for result in session.results:
        assert result.passed, (result.name, result.differences)
        states = _states(result.prefect_flow_run_id)
        assert "PAUSED" in states, states
        assert _flow_run(result.prefect_flow_run_id).state.is_final(), states  # nothing waits any more
    assert len(session.results) == 2


def test_an_unmet_expectation_of_a_case_on_prefect_is_a_failure_with_its_differences(prefect_api, write_test) -> None:
    path = write_test("definition: order_check\ncases:\n" + _case("expects a rejection", "low", """\
    expect:
      outcome: rejected
      calls: {lookup_price: 2}
"""))
    session = run_tests([path])
    [result] = session.results
    assert session.exit_code() == 1
    assert not result.passed
    assert {(d.what, d.expected, d.actual) for d in result.differences} == {
        ("outcome", "rejected", "approved"), ("calls.lookup_price", 2, 1)}
    assert _flow_run(result.prefect_flow_run_id).state.type.value == "COMPLETED"


def test_prefect_takes_a_boolean_only(write_test) -> None:
    path = write_test("definition: order_check\ncases:\n" + _case("on Prefect?", "low", prefect='"yes"'))
    session = run_tests([path])
    assert not session.results
    [problem] = session.problems
    assert (problem.code, problem.path, problem.line, problem.col) == ("wrong-type", "cases[0].prefect", 4, 14)
    assert "boolean" in problem.message and "prefect: true" in (problem.hint or "")


_PROBE = """
import json, sys
from flows.testing.runner import run_tests
session = run_tests(["definitions/tests"], pattern="in-process")
print(json.dumps({"problems": [d.message for d in session.problems],
                  "passed": [r.name for r in session.results if r.passed],
                  "prefect_loaded": "prefect" in sys.modules}))
"""


def test_cases_without_prefect_never_touch_it(project: Path, write_test) -> None:
    """A file with a ``prefect: true`` case: choosing only the other case loads no Prefect at all
    (nor starts or asks any server)."""
    write_test("definition: order_check\ncases:\n" + _case("on Prefect", "low")
               + _case("in-process", "low", "    expect: {outcome: approved}\n", prefect="false"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env["PREFECT_API_URL"] = "http://127.0.0.1:9/api"  # nothing listens there
    done = subprocess.run([sys.executable, "-c", _PROBE], cwd=project, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found == {"problems": [], "passed": ["in-process"], "prefect_loaded": False}, found


def test_a_case_on_prefect_starts_nothing_that_waits_for_its_run(prefect_api, write_test) -> None:
    """The flow body on Prefect calls no ``run.ended`` hook for a test case's run (``on_complete``
    chains start there), as the in-process path does not."""
    from flows import moments

    ended: list[str] = []
    remove = moments.on("run.ended", lambda definition, result, catalog: ended.append(definition))
    try:
        path = write_test("definition: order_check\ncases:\n" + _case("a small order", "low",
                                                                       "    expect: {outcome: approved}\n"))
        session = run_tests([path])
    finally:
        remove()
    [result] = session.results
    assert result.passed and result.prefect_flow_run_id, result.differences
    assert ended == []
