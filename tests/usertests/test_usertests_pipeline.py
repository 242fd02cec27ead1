"""``ergon test`` on a pipeline with a human task: a task the case leaves unanswered pauses the
run, as in a process, instead of failing it.

The pipeline, written into the shop project: ``prepare`` (a fixed update) → ``signoff`` (a human
task) → ``publish`` (a fixed update), and ``notify`` beside ``signoff`` (needs ``prepare`` only).
"""

from __future__ import annotations

from pathlib import Path

from flows.testing.runner import run_tests

PIPELINE = """\
kind: pipeline
name: release_signoff
context:
  schema:
    type: object
    properties:
      version: {type: string}
      prepared: {type: boolean}
      notified: {type: boolean}
      decision: {type: string}
      published: {type: boolean}
    required: [version]
nodes:
  prepare:
    type: tool
    config: {context_update: {prepared: true}}
    writes: [prepared]
  notify:
    type: tool
    needs: [prepare]
    config: {context_update: {notified: true}}
    writes: [notified]
  signoff:
    type: human_task
    needs: [prepare]
    task:
      title: "Sign off {{ version }}"
      fields:
        - {name: decision, type: select, required: true, options: [ship, hold]}
    writes: [decision]
  publish:
    type: tool
    needs: [signoff, notify]
    config: {context_update: {published: true}}
    writes: [published]
"""


def _write(project: Path, write_test, cases: str):
    (project / "definitions" / "release_signoff.yaml").write_text(PIPELINE)
    return write_test("definition: release_signoff\ncases:\n" + cases, name="release_signoff.test.yaml")


def test_an_unanswered_task_in_a_pipeline_pauses_the_run(project, write_test) -> None:
    try:
        path = _write(project, write_test, """\
  - name: nobody signs off yet
    inputs: {version: "1.2"}
    expect: {status: paused}
""")
        session = run_tests([path])
    finally:
        (project / "definitions" / "release_signoff.yaml").unlink()
    assert not session.problems, [d.format() for d in session.problems]
    (result,) = session.results
    assert result.actual.status == "paused", (result.actual.status, result.actual.error)
    assert result.passed, result.differences
    assert "signoff" in (result.actual.error or "") and "waits for a person" in (result.actual.error or "")
    # what ran before the pause is kept; what needs the answer never started
    assert result.actual.context["prepared"] is True
    assert "publish" not in result.actual.route
    assert "published" not in result.actual.context


def test_an_answered_task_in_a_pipeline_completes_the_run(project, write_test) -> None:
    try:
        path = _write(project, write_test, """\
  - name: release manager ships
    inputs: {version: "1.2"}
    mocks:
      tasks:
        signoff: {answer: {decision: ship}}
    expect:
      status: completed
      outcome: completed
      context: {decision: ship, published: true, notified: true}
""")
        session = run_tests([path])
    finally:
        (project / "definitions" / "release_signoff.yaml").unlink()
    assert not session.problems, [d.format() for d in session.problems]
    (result,) = session.results
    assert result.passed, result.differences


FAILING = """\
kind: pipeline
name: failing_chain
context:
  schema:
    type: object
    properties:
      order_id: {type: string}
      price: {type: number}
      done: {type: boolean}
    required: [order_id]
nodes:
  price:
    type: tool
    tool: lookup_price
    input: {order_id: "{{ order_id }}"}
    writes: [price]
  finish:
    type: tool
    needs: [price]
    config: {context_update: {done: true}}
    writes: [done]
"""


def test_the_steps_after_a_failure_are_not_in_the_route_nor_covered(project, write_test) -> None:
    from flows.testing.coverage import coverage

    (project / "definitions" / "failing_chain.yaml").write_text(FAILING)
    try:
        path = write_test("""\
definition: failing_chain
cases:
  - name: the price service is down
    inputs: {order_id: A-1}
    expect: {status: failed, route: [price]}
""", name="failing_chain.test.yaml")
        session = run_tests([path])
    finally:
        (project / "definitions" / "failing_chain.yaml").unlink()
    assert not session.problems, [d.format() for d in session.problems]
    (result,) = session.results
    assert result.actual.status == "failed"
    # `finish` never ran: the engine recorded it as a failed visit the failure left unrun
    assert result.actual.route == ["price"], result.actual.route
    assert result.passed, result.differences
    (measured,) = coverage(session.plans, session.results)
    assert measured.nodes_taken == ["price"], measured.nodes_taken


GATED = """\
kind: pipeline
name: gated_notice
context:
  schema:
    type: object
    properties:
      amount: {type: number}
      checked: {type: boolean}
      noticed: {type: boolean}
      archived: {type: boolean}
    required: [amount]
nodes:
  check:
    type: tool
    config: {context_update: {checked: true}}
    writes: [checked]
  notice:
    type: tool
    needs: [check]
    when: {">": [{var: amount}, 100]}
    config: {context_update: {noticed: true}}
    writes: [noticed]
  archive:
    type: tool
    needs: [check]
    when: {"<": [{var: amount}, 0]}
    config: {context_update: {archived: true}}
    writes: [archived]
"""


def test_coverage_counts_a_pipeline_nodes_when_seen_true_and_false(project, write_test) -> None:
    from flows.testing.coverage import coverage

    (project / "definitions" / "gated_notice.yaml").write_text(GATED)
    try:
        path = write_test("""\
definition: gated_notice
cases:
  - name: a large amount is noticed
    inputs: {amount: 500}
    expect: {status: completed, route: [check, notice]}
  - name: a small amount is not
    inputs: {amount: 5}
    expect: {status: completed, route: [check]}
""", name="gated_notice.test.yaml")
        session = run_tests([path])
    finally:
        (project / "definitions" / "gated_notice.yaml").unlink()
    assert not session.problems, [d.format() for d in session.problems]
    assert all(r.passed for r in session.results), [r.differences for r in session.results]
    (measured,) = coverage(session.plans, session.results)
    # `notice`'s when went both ways; `archive`'s was false in both cases, never true
    assert [(g.what, g.seen_true, g.seen_false) for g in measured.guards] == [
        ("notice (when)", True, True), ("archive (when)", False, True)]
    assert measured.as_dict()["guards"] == {"seen": 3, "total": 4, "never_true": ["archive (when)"], "never_false": []}
