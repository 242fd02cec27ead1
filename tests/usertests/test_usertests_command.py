"""The ``ergon test`` command as a user meets it: printed differences, diagnostics, exit codes,
JUnit XML, JSON, route coverage, ``ergon check`` covering test files, and the real CLI process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

from flows.cli import run


PASSING = """
definition: order_check
cases:
  - name: a low-priority order is approved automatically
    inputs: {order_id: o-1, amount: 40}
    mocks:
      tools: {lookup_price: {returns: {price: 12.5}}}
      interactions: {rate_order: [{returns: {priority: low}}]}
    expect:
      outcome: approved
      route: [price, rate, route, auto, approved]
"""

FAILING = """
definition: order_check
cases:
  - name: expects the review path
    inputs: {order_id: o-1, amount: 40}
    mocks:
      tools: {lookup_price: {returns: {price: 12.5}}}
      interactions: {rate_order: [{returns: {priority: low}}]}
    expect:
      status: completed
      outcome: rejected
      route: [price, rate, route, review, rejected]
      context: {decision: reject, price: 12.5, notes: checked}
      calls: {lookup_price: 2, rate_order: 1}
"""


def test_all_passing_exits_0_and_prints_each_case(project, write_test, capsys) -> None:
    write_test(PASSING)
    assert run(["test"]) == 0
    out = capsys.readouterr().out
    assert "PASS  order_check › a low-priority order is approved automatically" in out


def test_a_failing_case_exits_1_and_prints_what_differs(project, write_test, capsys) -> None:
    write_test(FAILING + PASSING.split("cases:")[1])
    assert run(["test"]) == 1
    captured = capsys.readouterr()
    lines = [line.strip() for line in captured.out.splitlines()]
    assert any(line.startswith("FAIL  order_check › expects the review path") for line in lines)
    assert "outcome: expected `rejected`, got `approved`" in lines
    assert "route: they part at step 4: expected `review`, the run took `auto`" in lines
    assert "expected: price → rate → route → review → rejected" in lines
    assert "actual:   price → rate → route → auto → approved" in lines
    assert "context.decision: expected `reject`, got `approve`" in lines
    assert "context.notes: expected `checked`, got ``" in lines
    assert "calls.lookup_price: expected 2, got 1" in lines
    # what matched is not reported
    assert not any(line.startswith(("context.price", "calls.rate_order", "status:")) for line in lines)
    assert any(line.startswith("PASS  order_check › a low-priority order") for line in lines)
    assert "2 case(s): 1 passed, 1 failed" in captured.err


def test_k_selects_cases_by_name(project, write_test, capsys) -> None:
    write_test(FAILING + PASSING.split("cases:")[1])
    assert run(["test", "-k", "low-priority"]) == 0
    assert "1 case(s): 1 passed, 0 failed" in capsys.readouterr().out


def test_problems_of_a_test_file_exit_2_with_file_line_col_and_hints(project, write_test, capsys) -> None:
    path = write_test("""\
        definition: order_check
        cases:
          - name: typos everywhere
            inputs: {order_id: o-1, amout: 40}
            mocks:
              tools: {lookup_prise: {returns: {price: 1}}}
              interactions:
                rate_order: [{returns: {priority: urgent}}]
                rate_ordr: {returns: {}}
              tasks:
                reveiw: {answer: {decision: approve}}
                price: {answer: {}}
            expect:
              outcome: aproved
              route: [price, rate, rout]
              context: {decison: approve}
              calls: {lookup_price: 1, rate_orders: 1}
        """)
    assert run(["test"]) == 2
    err = capsys.readouterr().err
    expected = [
        f"{path}:4:29: error[unknown-field] cases[0].inputs.amout: `amout` is not a field of order_check's context",
        "hint: did you mean `amount`?",
        f"{path}:6:15: error[unknown-tool] cases[0].mocks.tools.lookup_prise: no tool named `lookup_prise`",
        "hint: did you mean `lookup_price`?",
        f"{path}:8:32: error[mock-result] cases[0].mocks.interactions.rate_order[0].returns: the answer does not fit "
        "the result schema of `rate_order`: priority: 'urgent' is not one of ['low', 'high']",
        f"{path}:9:9: error[unknown-interaction] cases[0].mocks.interactions.rate_ordr: no interaction named `rate_ordr`",
        f"{path}:11:9: error[unknown-node] cases[0].mocks.tasks.reveiw: order_check has no node `reveiw`",
        "hint: did you mean `review`?",
        f"{path}:12:9: error[unknown-node] cases[0].mocks.tasks.price: `price` is not a human_task node of order_check",
        f"{path}:14:16: error[unknown-outcome] cases[0].expect.outcome: order_check cannot end with outcome `aproved`",
        "hint: did you mean `approved`?",
        f"{path}:15:28: error[unknown-node] cases[0].expect.route[2]: order_check has no node `rout`",
        f"{path}:16:17: error[unknown-field] cases[0].expect.context.decison",
        f"{path}:17:32: error[unknown-tool] cases[0].expect.calls.rate_orders: no tool or interaction named `rate_orders`",
    ]
    for text in expected:
        assert text in err, f"missing: {text}\n---\n{err}"
    assert "Traceback" not in err


def test_a_file_that_is_not_a_test_exits_2_without_a_traceback(project, write_test, capsys) -> None:
    write_test("definition: order_check\ncases:\n  - name: x\n    expect: {status: done, rout: []}\n")
    write_test("definition: [unclosed\n", name="broken.test.yaml")
    write_test("definition: nope\ncases: [{name: x}]\n", name="unknown.test.yaml")
    assert run(["test"]) == 2
    err = capsys.readouterr().err
    assert "order_check.test.yaml:4:22: error[bad-value] cases[0].expect.status" in err
    assert "order_check.test.yaml:4:28: error[unknown-key] cases[0].expect.rout: unknown key `rout`" in err
    assert "hint: did you mean `route`?" in err
    assert "broken.test.yaml:2:1: error[yaml-syntax]" in err
    assert "unknown.test.yaml:1:13: error[unknown-definition] definition: no runnable definition named `nope`" in err
    assert "Traceback" not in err


def test_no_test_files_or_a_missing_path_exit_2(project, capsys) -> None:
    assert run(["test"]) == 2
    assert "no test files (*.test.yaml) under definitions/tests" in capsys.readouterr().err
    assert run(["test", "no/such/folder"]) == 2
    assert "no such file or folder: no/such/folder" in capsys.readouterr().err


def test_junit_xml_has_a_suite_per_file_a_case_per_case_and_a_failure_per_failed_case(project, write_test,
                                                                                      tmp_path, capsys) -> None:
    path = write_test(FAILING + PASSING.split("cases:")[1])
    report = tmp_path / "junit.xml"
    assert run(["test", "--junit", str(report)]) == 1
    root = ET.parse(report).getroot()
    assert root.tag == "testsuites"
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("2", "1", "0")
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == [str(path)]
    suite = suites[0]
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("2", "1", "0")
    cases = suite.findall("testcase")
    assert [(c.get("classname"), c.get("name")) for c in cases] == [
        ("order_check", "expects the review path"), ("order_check", "a low-priority order is approved automatically")]
    assert all(float(c.get("time") or "-1") >= 0 for c in cases)
    failure = cases[0].find("failure")
    assert failure is not None and cases[1].find("failure") is None
    assert failure.get("message") == "outcome, route, context.decision, context.notes, calls.lookup_price differ"
    assert "route: expected ['price', 'rate', 'route', 'review', 'rejected']" in (failure.text or "")


def test_junit_reports_an_invalid_file_as_an_error(project, write_test, tmp_path, capsys) -> None:
    write_test("definition: nope\ncases: [{name: x}]\n")
    report = tmp_path / "junit.xml"
    assert run(["test", "--junit", str(report)]) == 2
    suite = ET.parse(report).getroot().find("testsuite")
    assert suite is not None and suite.get("errors") == "1"
    error = suite.find("testcase/error")
    assert error is not None and error.get("type") == "unknown-definition"


def test_json_output_is_machine_readable(project, write_test, capsys) -> None:
    write_test(FAILING)
    assert run(["test", "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert (doc["exit_code"], doc["passed"], doc["failed"]) == (1, 0, 1)
    case = doc["cases"][0]
    assert case["route"] == ["price", "rate", "route", "auto", "approved"]
    assert case["calls"] == {"lookup_price": 1, "rate_order": 1}
    assert {"what": "calls.lookup_price", "expected": 2, "actual": 1} in case["differences"]


COVERING_AUTO_ONLY = """
definition: order_check
cases:
  - name: auto
    inputs: {order_id: o-1, amount: 40}
    mocks:
      tools: {lookup_price: {returns: {price: 1}}}
      interactions: {rate_order: {returns: {priority: low}}}
"""


def test_coverage_counts_the_nodes_and_moves_the_cases_took(project, write_test, capsys) -> None:
    write_test(COVERING_AUTO_ONLY)
    assert run(["test", "--json", "--coverage"]) == 0
    (found,) = json.loads(capsys.readouterr().out)["coverage"]
    # 7 nodes, 7 moves; the auto path takes 5 nodes and 4 moves
    assert found["nodes"] == {"taken": 5, "total": 7, "never": ["review", "rejected"]}
    assert found["moves"]["taken"] == 4 and found["moves"]["total"] == 7
    assert found["moves"]["never"] == ["route → review (high priority)", "review → approved (approved)",
                                       "review → rejected (rejected)"]
    assert found["percent"] == round(100 * 9 / 14, 1)
    assert run(["test", "--coverage"]) == 0
    out = capsys.readouterr().out
    assert "coverage order_check: 64% (5/7 nodes, 4/7 moves, 1 case(s))" in out
    assert "nodes never visited: review, rejected" in out
    assert "route → review (high priority)" in out


def test_coverage_is_full_when_every_route_is_taken(project, write_test, capsys) -> None:
    write_test(COVERING_AUTO_ONLY + """
  - name: approved by sales
    inputs: {order_id: o-2, amount: 900}
    mocks:
      tools: {lookup_price: {returns: {price: 1}}}
      interactions: {rate_order: {returns: {priority: high}}}
      tasks: {review: {answer: {decision: approve}}}
  - name: rejected by sales
    inputs: {order_id: o-3, amount: 900}
    mocks:
      tools: {lookup_price: {returns: {price: 1}}}
      interactions: {rate_order: {returns: {priority: high}}}
      tasks: {review: {answer: {decision: reject}}}
""")
    assert run(["test", "--json", "--coverage"]) == 0
    (found,) = json.loads(capsys.readouterr().out)["coverage"]
    assert (found["percent"], found["moves"]["never"], found["nodes"]["never"]) == (100.0, [], [])


def test_ergon_check_checks_test_files_too(project, write_test, capsys) -> None:
    path = write_test("definition: order_check\ncases:\n  - name: x\n    expect: {route: [pricee]}\n")
    assert run(["check"]) == 1
    out = capsys.readouterr().out
    assert f"{path}:4:22: error[unknown-node] cases[0].expect.route[0]: order_check has no node `pricee`" in out
    write_test(PASSING)
    assert run(["check"]) == 0


def test_the_real_cli_in_a_fresh_project(project, write_test) -> None:
    """As a user runs it: `python -m flows.cli test` in the project folder, nothing else set up —
    no server, no ERGON_HOME, no model key; the project's own store is never created."""
    write_test(PASSING)
    write_test(FAILING, name="failing.test.yaml")
    env = {"PATH": os.environ["PATH"], "HOME": str(project)}  # what a user has: the installed ergon, no path set
    done = subprocess.run([sys.executable, "-m", "flows.cli", "test", "--junit", "report.xml"], cwd=project, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stderr
    assert "PASS  order_check › a low-priority order is approved automatically" in done.stdout
    assert "FAIL  order_check › expects the review path" in done.stdout
    assert "2 case(s): 1 passed, 1 failed" in done.stderr
    assert "Traceback" not in done.stderr
    assert ET.parse(project / "report.xml").getroot().get("failures") == "1"
    assert not (project / ".ergon").exists()
    (project / "report.xml").unlink()


def test_guard_coverage_says_which_outcomes_of_each_guard_the_cases_saw(project, write_test, capsys) -> None:
    write_test(COVERING_AUTO_ONLY + """
  - name: rejected by sales
    inputs: {order_id: o-3, amount: 900}
    mocks:
      tools: {lookup_price: {returns: {price: 1}}}
      interactions: {rate_order: {returns: {priority: high}}}
      tasks: {review: {answer: {decision: reject}}}
""")
    assert run(["test", "--json", "--coverage"]) == 0
    (found,) = json.loads(capsys.readouterr().out)["coverage"]
    # three guards: route's `high priority` branch (false for the auto case, true for the other),
    # review's `approved` (false: the rejection tried it first) and `rejected` (true, never false)
    assert found["guards"] == {"seen": 4, "total": 6,
                               "never_true": ["review → approved (approved)"],
                               "never_false": ["review → rejected (rejected)"]}
    assert run(["test", "--coverage"]) == 0
    out = capsys.readouterr().out
    assert "guards: 4/6 outcomes seen" in out
    assert "review → approved (approved): never true" in out
    assert "review → rejected (rejected): never false" in out
    assert "route → review (high priority)" not in out.split("guards:")[1]
