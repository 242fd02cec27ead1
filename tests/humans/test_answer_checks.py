"""An answer is checked against everything the run will check before it is accepted: the
context schema of the fields it writes and the context's size cap. A refused answer leaves the
task open and the run paused; an optional field left out is not written (never a `null` the
schema then refuses)."""

from __future__ import annotations

import time

import pytest
from test_pause_resume import cli, finish, start, wait_for_task

from flows import humans

pytestmark = pytest.mark.prefect

REVIEW = """
format_version: 1
process: {name}
initial: review
context:
  schema:
    type: object
    properties:
      party: {{type: string}}
      score: {{type: integer, minimum: 0, maximum: 10}}
      note: {{type: string}}
      decision: {{type: string}}
    required: [party]
nodes:
  review:
    type: human_task
    task:
      title: "Review {{{{ party }}}}"
      fields:
        - {{name: decision, type: select, required: true, options: [approve, reject]}}
        - {{name: score, type: number}}
        - {{name: note, type: text}}
    writes: [decision, score, note]
    transitions: [{{to: done}}]
  done: {{type: final}}
"""


def test_an_optional_number_left_out_is_not_in_the_clean_answer():
    fields = [{"name": "decision", "type": "string", "required": True}, {"name": "score", "type": "number"}]
    clean, errors = humans.validate_answer(fields, {"decision": "ok"})
    assert errors == [] and clean == {"decision": "ok"}


def test_a_field_schema_attached_to_the_task_is_checked():
    fields = [{"name": "score", "type": "number", "schema": {"type": "integer", "maximum": 10}}]
    _, errors = humans.validate_answer(fields, {"score": "11"})
    assert len(errors) == 1 and errors[0].startswith("score:") and "10" in errors[0]


def test_answers_the_run_would_refuse_are_refused_and_the_run_completes_with_a_valid_one(env, definitions):
    from flows.store import runs as run_store
    from flows.store import tasks as task_store

    (definitions / "review_checks.yaml").write_text(REVIEW.format(name="review_checks"))
    proc = start("review_checks", env)
    try:
        task = wait_for_task("review_checks")
        for args, words in [
            (["--set", "decision=approve", "--set", "score=42"], "score"),  # the schema's maximum
            (["--set", "decision=approve", "--set", "note=" + "n" * 100_000], "64 KB"),  # the context cap
        ]:
            refused = cli(["tasks", "answer", task.id, *args], env)
            assert refused.returncode == 1, refused.stdout + refused.stderr
            assert words in refused.stdout + refused.stderr
        time.sleep(1.0)
        assert task_store.get_task(task.id).status == "pending" and run_store.get_run(task.run_id).status == "paused"
        answered = cli(["tasks", "answer", task.id, "--set", "decision=approve"], env)  # score left out
        assert answered.returncode == 0, answered.stdout + answered.stderr
        result = finish(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert result["status"] == "completed", result.get("error")
    assert result["context"]["decision"] == "approve" and "score" not in result["context"]
