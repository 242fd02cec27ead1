"""``ergon test`` and who answers a task: ``people`` (the file's, or a case's own) says who belongs
to which group; with it, the person named by ``as`` answers by the rules of ``ergon tasks answer``,
and an answer refused for who gives it leaves the task open — the case ends ``paused`` and
``expect.refused`` names the node. Without ``people``, ``as`` counts as a member of the task's group.

The shop project's ``order_check``: an order rated high goes to ``review``, a task for ``group:sales``.
"""

from __future__ import annotations

from flows.testing.runner import run_tests

HIGH = "{interactions: {rate_order: {returns: {priority: high}}}, tools: {lookup_price: {returns: {price: 10}}}"


def test_a_person_outside_the_group_is_refused_and_the_case_pauses(project, write_test) -> None:
    path = write_test(f"""\
        definition: order_check
        people: {{maria: [sales], bob: [finance]}}
        cases:
          - name: bob is not in sales
            inputs: {{order_id: A-1, amount: 900}}
            mocks: {HIGH}, tasks: {{review: {{answer: {{decision: approve}}, as: bob}}}}}}
            expect:
              status: paused
              refused: [review]
              route: [price, rate, route, review]
              error: refused
          - name: maria is in sales
            inputs: {{order_id: A-1, amount: 900}}
            mocks: {HIGH}, tasks: {{review: {{answer: {{decision: approve}}, as: maria}}}}}}
            expect: {{status: completed, outcome: approved, refused: []}}
          - name: the case's own people replace the file's
            people: {{bob: [sales]}}
            inputs: {{order_id: A-1, amount: 900}}
            mocks: {HIGH}, tasks: {{review: {{answer: {{decision: reject}}, as: bob}}}}}}
            expect: {{status: completed, outcome: rejected}}
        """)
    session = run_tests([path])
    assert not session.problems, [d.format() for d in session.problems]
    assert [r.passed for r in session.results] == [True, True, True], \
        [(r.differences, r.actual.error) for r in session.results]
    refused = session.results[0]
    assert "bob" in (refused.actual.error or "") and "sales" in (refused.actual.error or ""), refused.actual.error


def test_without_people_the_person_named_counts_as_a_member(project, write_test) -> None:
    path = write_test(f"""\
        definition: order_check
        cases:
          - name: bob answers for sales
            inputs: {{order_id: A-1, amount: 900}}
            mocks: {HIGH}, tasks: {{review: {{answer: {{decision: approve}}, as: bob}}}}}}
            expect: {{status: completed, outcome: approved}}
        """)
    session = run_tests([path])
    assert not session.problems, [d.format() for d in session.problems]
    (result,) = session.results
    assert result.passed, (result.differences, result.actual.error)


def test_an_expected_refusal_that_names_no_task_node_is_an_error(project, write_test) -> None:
    path = write_test("""\
        definition: order_check
        cases:
          - name: a typo
            inputs: {order_id: A-1, amount: 900}
            expect: {refused: [reveiw]}
        """)
    session = run_tests([path])
    (problem,) = session.problems
    assert problem.code == "unknown-node", problem.format()
    assert (problem.line, problem.col) == (5, 24), problem.format()
    assert "review" in (problem.hint or "")
