"""Answers through Prefect's own resume API follow Ergon's rules: where a task names an assignee
or four-eyes, the form asks a one-time answer code (``ergon tasks code``), checked and spent when
the run resumes — never a personal token, which Prefect would keep (one typed there is refused
and revoked); a
refused answer is audited and the run pauses again with the reason above the form; an
unassigned task stays open to anyone who reaches Prefect. Real runs on the local Prefect server."""

from __future__ import annotations

import time

import pytest

from test_pause_resume import cli, finish, start, wait_for_task

pytestmark = pytest.mark.prefect

GUARDED = """
format_version: 1
process: {name}
initial: review
context:
  schema:
    type: object
    properties:
      party: {{type: string}}
      decision: {{type: string}}
      notes: {{type: string, maxLength: 12}}
    required: [party]
nodes:
  review:
    type: human_task
    task:
      title: "Review {{{{ party }}}}"
      {assignee}
      four_eyes: {four_eyes}
      fields:
        - {{name: decision, type: select, required: true, options: [approve, reject]}}
        - {{name: notes, type: text}}
    writes: [decision, notes]
    transitions:
      - {{to: done, guard: {{"==": [{{var: decision}}, approve]}}}}
      - {{to: rejected}}
  done: {{type: final}}
  rejected: {{type: final}}
"""


def guarded(name: str, *, assignee: str | None = "group:legal", four_eyes: bool = False) -> str:
    return GUARDED.format(name=name, assignee=f"assignee: {assignee}" if assignee else "",
                          four_eyes=str(four_eyes).lower())


def paused_keyset(flow_run_id: str, *, other_than: dict | None = None, timeout: float = 60) -> dict:
    """The keyset of the flow run's pause once it is paused (under another key than ``other_than``)."""
    from prefect.client.orchestration import get_client

    deadline = time.monotonic() + timeout
    while True:
        with get_client(sync_client=True) as client:
            run = client.read_flow_run(flow_run_id)
        keyset = run.state.state_details.run_input_keyset if run.state else None
        if run.state and run.state.type.value == "PAUSED" and keyset and keyset != other_than:
            from prefect.input.actions import read_flow_run_input

            if read_flow_run_input(keyset["schema"], flow_run_id=flow_run_id) is not None:
                return keyset
        assert time.monotonic() < deadline, f"flow run {flow_run_id} did not pause (again)"
        time.sleep(0.2)


def stored(keyset: dict, flow_run_id: str, which: str):
    from prefect.input.actions import read_flow_run_input

    return read_flow_run_input(keyset[which], flow_run_id=flow_run_id)


def refusals(task_id: str) -> list[dict]:
    from flows.store import tasks as task_store

    return [{"actor": e.actor, **(e.detail or {})} for e in task_store.task_events(task_id) if e.action == "refused"]


def test_an_assigned_four_eyes_task_answered_through_prefect_proves_who_answers(env, definitions, tokens):
    from prefect.flow_runs import resume_flow_run

    from flows import answer_codes, people
    from flows.store import runs as run_store
    from flows.store import tasks as task_store

    people.add_user("bob", ["legal"])
    people.add_user("starter", ["legal"])
    people.add_user("mallory", ["sales"])
    (definitions / "guarded.yaml").write_text(guarded("guarded", four_eyes=True))
    proc = start("guarded", env)
    try:
        task = wait_for_task("guarded")
        flow_run_id = run_store.get_run(task.run_id).prefect_flow_run_id
        keyset = paused_keyset(flow_run_id)
        schema = stored(keyset, flow_run_id, "schema")
        code_field = schema["properties"]["answer_code"]
        assert code_field["format"] == "password" and code_field["writeOnly"] is True, "a secret: Prefect masks it"
        assert code_field["title"] == "Your answer code (required)" and "answer_code" in schema["required"]
        assert f"ergon tasks code {task.id}" in stored(keyset, flow_run_id, "description")

        with pytest.raises(RuntimeError, match="answer_code"):  # Prefect itself asks for it
            resume_flow_run(flow_run_id, run_input={"decision": "approve"})

        def code(user: str) -> str:  # as the approver gets one: `ergon tasks code`, acting as themselves
            given = cli(["tasks", "code", task.id, "--token", tokens[user]], env)
            assert given.returncode == 0, given.stdout + given.stderr
            return given.stdout.strip()

        refused_code = cli(["tasks", "code", task.id, "--token", tokens["mallory"]], env)
        assert refused_code.returncode == 1 and "mallory is not a member" in refused_code.stderr, refused_code.stderr
        tries = [
            ("code_not-one-of-this-store", "approve", "not one this store gave"),
            (answer_codes.issue(task.id, "mallory").code, "approve", "mallory is not a member"),  # as if allowed once
            (answer_codes.issue(task.id, "starter").code, "approve", "four-eyes: starter started run"),
            (code("bob"), "approve", "notes: "),  # a note longer than its context field's maxLength
            (tokens["bob"], "approve", "Ergon revoked it"),  # a personal token: Prefect keeps what it is sent
        ]
        for proof, decision, reason in tries:
            notes = "far too long for the field" if reason == "notes: " else "ok"
            resume_flow_run(flow_run_id, run_input={"decision": decision, "notes": notes, "answer_code": proof})
            previous, keyset = keyset, paused_keyset(flow_run_id, other_than=keyset)
            assert reason in stored(keyset, flow_run_id, "description").split("\n\n")[0], reason
            assert "Ergon refused the last answer" in stored(keyset, flow_run_id, "description")
            row = task_store.get_task(task.id)
            assert row.status == "pending" and row.answered_by is None, "refused: nothing recorded"
            assert run_store.get_run(task.run_id).status == "paused"
            assert stored(previous, flow_run_id, "response")["answer_code"] == "(removed by Ergon)"
        assert [r["actor"] for r in refusals(task.id) if r["action"] == "code"] == ["mallory"]
        audit = [r for r in refusals(task.id) if r["action"] == "answer"]
        assert [r["via"] for r in audit] == ["prefect"] * 5
        assert [r["actor"] for r in audit] == ["prefect", "mallory", "starter", "bob", "prefect"]
        assert "maxLength" not in str(audit[3]) and audit[3]["errors"], audit[3]
        revoked = cli(["tasks", "code", task.id, "--token", tokens["bob"]], env)
        assert revoked.returncode != 0 and "revoked" in revoked.stderr, "the token typed into Prefect's form is dead"

        bob = answer_codes.issue(task.id, "bob").code
        resume_flow_run(flow_run_id, run_input={"decision": "approve", "notes": "fine", "answer_code": bob})
        result = finish(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert result["status"] == "completed" and result["outcome"] == "done", result
    assert result["context"]["notes"] == "fine"
    row = task_store.get_task(task.id)
    assert row.answered_by == "bob" and row.answered_via == "prefect" and row.answer == {"decision": "approve",
                                                                                        "notes": "fine"}
    assert stored(keyset, flow_run_id, "response")["answer_code"] == "(removed by Ergon)"
    with pytest.raises(answer_codes.CodeRefused, match="used already"):  # what Prefect's files may keep is spent
        answer_codes.redeem(answer_codes.hash_code(bob), task.id)
    for secret in (tokens["bob"], tokens["mallory"], tokens["starter"], bob):
        assert secret not in str([e.model_dump() for e in task_store.task_events(task.id)])


def test_an_unassigned_task_is_answered_through_prefect_without_a_token(env, definitions):
    from prefect.flow_runs import resume_flow_run

    from flows.store import runs as run_store
    from flows.store import tasks as task_store

    (definitions / "open_review.yaml").write_text(guarded("open_review", assignee=None))
    proc = start("open_review", env)
    try:
        task = wait_for_task("open_review")
        flow_run_id = run_store.get_run(task.run_id).prefect_flow_run_id
        keyset = paused_keyset(flow_run_id)
        assert "answer_code" not in stored(keyset, flow_run_id, "schema")["properties"]
        resume_flow_run(flow_run_id, run_input={"decision": "reject", "notes": "no"})
        result = finish(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert result["status"] == "completed" and result["outcome"] == "rejected", result
    row = task_store.get_task(task.id)
    assert row.answered_by == "prefect" and row.answered_via == "prefect"


def test_an_answer_given_in_ergon_resumes_a_form_that_asks_a_code(env, definitions, tokens):
    """The CLI's answer is checked by Ergon; Prefect's form asks a code it cannot send, so it
    gets a marker instead, which proves nothing when typed into the form."""
    from prefect.flow_runs import resume_flow_run

    from flows import people
    from flows.store import runs as run_store
    from flows.store import tasks as task_store

    people.add_user("bob", ["legal"])
    (definitions / "mixed.yaml").write_text(guarded("mixed"))
    proc = start("mixed", env)
    try:
        task = wait_for_task("mixed")
        flow_run_id = run_store.get_run(task.run_id).prefect_flow_run_id
        keyset = paused_keyset(flow_run_id)
        resume_flow_run(flow_run_id, run_input={"decision": "approve", "answer_code": "checked-by-ergon"})
        keyset = paused_keyset(flow_run_id, other_than=keyset)
        assert "needs a one-time code" in stored(keyset, flow_run_id, "description")
        done = cli(["tasks", "answer", task.id, "--set", "decision=reject", "--token", tokens["bob"]], env)
        assert done.returncode == 0, done.stdout + done.stderr
        result = finish(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert result["status"] == "completed" and result["outcome"] == "rejected"
    row = task_store.get_task(task.id)
    assert row.answered_by == "bob" and row.answered_via == "cli"
