"""``ergon test``'s answers to human tasks: one answer for every visit of the node, or a list used
one per visit in order — a visit past the list's end is left unanswered and the case ends ``paused``.

The process, written into the shop project: ``draft`` (a fixed update) → ``review`` (a human task
for ``group:editors``) → ``published``, or back through ``rework`` to ``review`` for edits.
"""

from __future__ import annotations

from pathlib import Path

from flows.testing.runner import run_tests

ARTICLE = """\
format_version: 1
kind: process
process: article_review
initial: draft
context:
  schema:
    type: object
    properties:
      title: {type: string}
      drafts: {type: integer}
      decision: {type: string, enum: [publish, edit]}
    required: [title]
  initial: {drafts: 0}
nodes:
  draft:
    type: tool
    config: {context_update: {drafts: 1}}
    writes: [drafts]
    transitions: [{to: review}]
  review:
    type: human_task
    task:
      title: "Review {{ title }}"
      assignee: group:editors
      fields:
        - {name: decision, type: select, required: true, options: [publish, edit]}
    writes: [decision]
    transitions:
      - {to: published, guard: {"==": [{var: decision}, publish]}}
      - {to: rework, guard: {"==": [{var: decision}, edit]}}
  rework:
    type: tool
    config: {context_update: {drafts: 2}}
    writes: [drafts]
    transitions: [{to: review}]
  published:
    type: final
"""


def _run(project: Path, write_test, text: str):
    (project / "definitions" / "article_review.yaml").write_text(ARTICLE)
    try:
        path = write_test("definition: article_review\n" + text, name="article_review.test.yaml")
        return run_tests([path])
    finally:
        (project / "definitions" / "article_review.yaml").unlink()


def test_a_list_of_task_answers_answers_one_visit_each_in_order(project, write_test) -> None:
    session = _run(project, write_test, """\
cases:
  - name: edits first, then published
    inputs: {title: Spring}
    mocks:
      tasks:
        review: [{answer: {decision: edit}, as: ana}, {answer: {decision: publish}}]
    expect:
      status: completed
      outcome: published
      route: [draft, review, rework, review, published]
      context: {drafts: 2, decision: publish}
  - name: one answer still answers every visit
    inputs: {title: Spring}
    mocks:
      tasks:
        review: {answer: {decision: publish}}
    expect: {status: completed, route: [draft, review, published]}
""")
    assert not session.problems, [d.format() for d in session.problems]
    assert [r.passed for r in session.results] == [True, True], \
        [(r.differences, r.actual.error) for r in session.results]


def test_a_visit_past_the_list_of_answers_pauses_the_case(project, write_test) -> None:
    session = _run(project, write_test, """\
cases:
  - name: edits asked, and nobody reviews again
    inputs: {title: Spring}
    mocks:
      tasks:
        review: [{answer: {decision: edit}}]
    expect:
      status: paused
      route: [draft, review, rework, review]
      context: {drafts: 2}
""")
    assert not session.problems, [d.format() for d in session.problems]
    (result,) = session.results
    assert result.passed, (result.differences, result.actual.error)
    assert "1 answer(s)" in (result.actual.error or ""), result.actual.error


def test_each_listed_answer_is_checked(project, write_test) -> None:
    session = _run(project, write_test, """\
cases:
  - name: a field the task does not have
    inputs: {title: Spring}
    mocks:
      tasks:
        review: [{answer: {decision: edit}}, {answer: {verdict: publish}}]
""")
    (problem,) = session.problems
    assert problem.code == "unknown-field", problem.format()
    assert problem.path == "cases[0].mocks.tasks.review[1].answer.verdict", problem.format()
    assert (problem.line, problem.col) == (7, 56), problem.format()
