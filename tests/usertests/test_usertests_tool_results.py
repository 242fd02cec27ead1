"""A tool mock's ``returns`` is held to what the tool can return, before any case runs.

The shop's ``lookup_price`` is hinted ``-> dict``: a mock returning a number is a test-file
error at its line and column. A built-in with a whole result schema (``summarizeText``) is held
to it. A tool whose result is not known (no return hint) takes any mocked result.
"""

from __future__ import annotations

from flows.cli import run
from flows.testing.runner import run_tests

UNTYPED = '''\
from flows.tools import tool


@tool
def shipping_quote(order_id: str):
    """No return hint: what it returns is not known."""
    return {"eur": 4.5}
'''


def test_a_tool_result_of_a_type_the_tool_cannot_return_is_an_error_at_its_place(project, write_test, capsys) -> None:
    path = write_test("""\
        definition: order_check
        cases:
          - name: price as a bare number
            inputs: {order_id: o-1, amount: 40}
            mocks:
              tools:
                lookup_price: {returns: 12.5}
          - name: second call gives a string
            inputs: {order_id: o-1, amount: 40}
            mocks:
              tools:
                lookup_price: [{raises: busy}, {returns: "12.5"}]
                summarizeText: {returns: {summary: 3}}
        """)
    assert run(["test"]) == 2
    err = capsys.readouterr().err
    expected = [
        f"{path}:7:33: error[mock-result] cases[0].mocks.tools.lookup_price.returns: `lookup_price` returns "
        "object (its return type hint), not number",
        "hint: give a result of type object, or change the tool's return hint",
        f"{path}:12:50: error[mock-result] cases[1].mocks.tools.lookup_price[1].returns: `lookup_price` returns "
        "object (its return type hint), not string",
        f"{path}:13:34: error[mock-result] cases[1].mocks.tools.summarizeText.returns: the result does not fit what "
        "`summarizeText` returns: summary: 3 is not of type 'string'",
    ]
    for text in expected:
        assert text in err, f"missing: {text}\n---\n{err}"
    assert "Traceback" not in err


def test_a_fitting_result_and_a_tool_of_unknown_result_are_not_refused(project, write_test) -> None:
    tools = project / "definitions" / "tools" / "untyped.py"
    tools.write_text(UNTYPED)
    try:
        path = write_test("""\
            definition: order_check
            cases:
              - name: fits
                inputs: {order_id: o-1, amount: 40}
                mocks:
                  tools:
                    lookup_price: {returns: {price: 12.5}}
                    shipping_quote: {returns: "anything at all"}
                    summarizeText: {returns: {summary: short}}
                  interactions: {rate_order: {returns: {priority: low}}}
                expect: {outcome: approved}
            """)
        session = run_tests([path])
    finally:
        tools.unlink()
    assert not session.problems, [d.format() for d in session.problems]
    assert session.results[0].passed, session.results[0].differences
