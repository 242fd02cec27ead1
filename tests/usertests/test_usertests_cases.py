"""``ergon test`` runs cases through the real engine and store: every mock kind, every expectation kind.

Each test writes a test file into the shop project (``conftest.py``) and runs it with
:func:`flows.testing.runner.run_tests`, the function the command calls; the assertions read
what the run did (route, context, calls, status) and the differences it reports.
"""

from __future__ import annotations

import os

from flows.stand_ins import STAND_INS
from flows.testing.runner import run_tests

PRICE = "lookup_price: {returns: {price: 12.5}}"


def _one(path):
    session = run_tests([path])
    assert not session.problems, [d.format() for d in session.problems]
    assert len(session.results) == 1
    return session.results[0]


def test_a_case_meets_every_kind_of_expectation(project, write_test) -> None:
    path = write_test(f"""
        definition: order_check
        cases:
          - name: a low-priority order is approved automatically
            inputs: {{order_id: o-1, amount: 40}}
            mocks:
              tools: {{{PRICE}}}
              interactions:
                rate_order: [{{returns: {{priority: low}}}}]
            expect:
              status: completed
              outcome: approved
              route: [price, rate, route, auto, approved]
              context: {{price: 12.5, priority: low, decision: approve}}
              calls: {{lookup_price: 1, rate_order: 1}}
    """)
    result = _one(path)
    assert result.passed, result.differences
    assert result.actual.route == ["price", "rate", "route", "auto", "approved"]
    assert result.actual.context["price"] == 12.5
    assert result.actual.calls == {"lookup_price": 1, "rate_order": 1}


def test_a_tool_that_raises_fails_the_run_with_its_message(project, write_test) -> None:
    path = write_test("""
        definition: order_check
        cases:
          - name: the price service is down
            inputs: {order_id: o-1, amount: 40}
            mocks:
              tools:
                lookup_price: {raises: "price service down"}
            expect:
              status: failed
              route: [price]
              error: price service down
              calls: {lookup_price: 3, rate_order: 0}
    """)
    result = _one(path)
    assert result.passed, result.differences
    # the node's policy retries twice: three calls, and the route names the node once
    assert result.actual.calls["lookup_price"] == 3
    assert "price service down" in (result.actual.error or "")


def test_a_list_of_results_is_used_one_per_call_and_runs_out(project, write_test) -> None:
    path = write_test("""
        definition: order_check
        cases:
          - name: the second attempt gets a price
            inputs: {order_id: o-1, amount: 40}
            mocks:
              tools:
                lookup_price: [{raises: busy}, {returns: {price: 7}}]
              interactions:
                rate_order: {returns: {priority: low}}
            expect:
              outcome: approved
              route: [price, rate, route, auto, approved]
              context: {price: 7}
              calls: {lookup_price: 2}
          - name: every result used up
            inputs: {order_id: o-1, amount: 40}
            mocks:
              tools:
                lookup_price: [{raises: busy}]
            expect:
              status: failed
    """)
    session = run_tests([path])
    first, second = session.results
    assert first.passed, first.differences
    assert second.passed, second.differences
    assert "gives 1 result(s) for tool `lookup_price`" in (second.actual.error or "")


def test_an_interaction_not_mocked_is_answered_by_the_offline_model(project, write_test) -> None:
    path = write_test(f"""
        definition: order_check
        cases:
          - name: the model decides
            inputs: {{order_id: o-1, amount: 40}}
            mocks:
              tools: {{{PRICE}}}
              tasks:
                review: {{answer: {{decision: approve}}}}
            expect:
              outcome: approved
              calls: {{rate_order: 1}}
    """)
    result = _one(path)
    assert result.passed, result.differences
    assert result.actual.context["priority"] in ("low", "high")  # a valid answer, whichever


def test_interaction_answers_are_given_per_call_in_order(project, write_test) -> None:
    path = write_test(f"""
        definition: order_check
        cases:
          - name: high
            inputs: {{order_id: o-1, amount: 40}}
            mocks:
              tools: {{{PRICE}}}
              interactions:
                rate_order: [{{returns: {{priority: high}}}}]
            expect: {{status: paused, route: [price, rate, route, review]}}
          - name: a model failure
            inputs: {{order_id: o-1, amount: 40}}
            mocks:
              tools: {{{PRICE}}}
              interactions:
                rate_order: [{{raises: "the model timed out"}}]
            expect: {{status: failed, route: [price, rate], error: the model timed out}}
    """)
    session = run_tests([path])
    assert [r.passed for r in session.results] == [True, True], [r.differences for r in session.results]
    paused = session.results[0]
    assert paused.actual.context["priority"] == "high"  # the context as the last checkpoint left it
    assert "review" in (paused.actual.error or "") and "waits for a person" in (paused.actual.error or "")


def test_a_task_answer_routes_the_run_and_is_checked_like_any_answer(project, write_test) -> None:
    path = write_test(f"""
        definition: order_check
        cases:
          - name: sales rejects
            inputs: {{order_id: o-1, amount: 900}}
            mocks:
              tools: {{{PRICE}}}
              interactions: {{rate_order: {{returns: {{priority: high}}}}}}
              tasks:
                review: {{answer: {{decision: reject, notes: too expensive}}, as: maria}}
            expect:
              outcome: rejected
              route: [price, rate, route, review, rejected]
              context: {{decision: reject, notes: too expensive}}
          - name: an answer outside the options
            inputs: {{order_id: o-1, amount: 900}}
            mocks:
              tools: {{{PRICE}}}
              interactions: {{rate_order: {{returns: {{priority: high}}}}}}
              tasks:
                review: {{answer: {{decision: maybe}}}}
            expect:
              status: failed
              error: was refused
    """)
    session = run_tests([path])
    rejected, refused = session.results
    assert rejected.passed, rejected.differences
    assert refused.passed, refused.differences
    assert "decision" in (refused.actual.error or "")


def test_stand_ins_and_the_store_do_not_outlive_the_run(project, write_test) -> None:
    before = os.environ.get("ERGON_DATABASE_URL")
    path = write_test(f"""
        definition: order_check
        cases:
          - name: any
            inputs: {{order_id: o-1, amount: 40}}
            mocks: {{tools: {{{PRICE}}}, interactions: {{rate_order: {{returns: {{priority: low}}}}}}}}
    """)
    assert _one(path).passed
    assert STAND_INS.get() is None
    assert os.environ.get("ERGON_DATABASE_URL") == before
    assert not (project / ".ergon").exists()  # the project's own store was never opened
