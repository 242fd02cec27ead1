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
