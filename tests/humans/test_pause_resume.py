"""Human tasks end to end: a run waits in a background `ergon run` process, people answer it
through the CLI or Prefect's own API, and the run moves on (or stays paused when refused)."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.prefect

ERGON = [sys.executable, "-m", "flows.cli"]

REVIEW = """
format_version: 1
process: {name}
initial: prepare
context:
  schema:
    type: object
    properties:
      party: {{type: string}}
      decision: {{type: string}}
      notes: {{type: string}}
      counter: {{type: integer}}
    required: [party]
  initial: {{counter: 0}}
nodes:
  prepare:
    type: tool
    tool: increment
    input: {{value: "{{{{ counter }}}}"}}
    writes: [counter]
    transitions: [{{to: review}}]
  review:
    type: human_task
    task:
      title: "Review {{{{ party }}}} (pass {{{{ counter }}}})"
      description: Decide.
      assignee: group:legal
      four_eyes: {four_eyes}
      fields:
        - {{name: decision, type: select, required: true, options: [approve, reject, again]}}
        - {{name: notes, type: text}}
    {timeout}
    writes: [decision, notes]
    transitions:
      - {{to: done, guard: {{"==": [{{var: decision}}, approve]}}}}
      - {{to: rejected, guard: {{"==": [{{var: decision}}, reject]}}}}
      - {{to: prepare, guard: {{"==": [{{var: decision}}, again]}}}}
  done: {{type: final}}
  rejected: {{type: final}}
"""


def review(name: str, *, four_eyes: bool = False, timeout: str = "") -> str:
    return REVIEW.format(name=name, four_eyes=str(four_eyes).lower(), timeout=timeout)


def cli(args: list[str], env: dict, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(ERGON + args, env=env, capture_output=True, text=True, timeout=120, **kw)


def start(name: str, env: dict) -> subprocess.Popen:
    return subprocess.Popen(ERGON + ["run", name, "--input", "party=ACME", "--json"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for_task(run_name: str, *, after: set[str] = frozenset(), timeout: float = 90.0):
    from flows.store import runs as run_store
    from flows.store import tasks as task_store

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        rows, _ = task_store.list_tasks(status="pending")
        fresh = [t for t in rows if t.id not in after and (run_store.get_run(t.run_id).definition_name == run_name)]
        if fresh and run_store.get_run(fresh[0].run_id).status == "paused":
            return fresh[0]
        time.sleep(0.2)
    raise AssertionError(f"no pending task for {run_name}")


def wait_paused_in_prefect(flow_run_id: str, timeout: float = 60.0) -> None:
    """Until Prefect has the flow run paused: only then does it take an answer through its resume API."""
    from prefect.client.orchestration import get_client

    deadline = time.monotonic() + timeout
    with get_client(sync_client=True) as client:
        while not client.read_flow_run(flow_run_id).state.is_paused():
            assert time.monotonic() < deadline, "the run never paused in Prefect"
            time.sleep(0.2)


def finish(proc: subprocess.Popen) -> dict:
    out, err = proc.communicate(timeout=120)
    assert out.strip(), err
    return json.loads(out.strip().splitlines()[-1])


def test_answer_through_the_cli_routes_by_guard_and_loops(env, definitions, tokens):
    from flows.store import tasks as task_store
    from flows.store import visits as visit_store

    (definitions / "review_cli.yaml").write_text(review("review_cli"))
    assert cli(["users", "add", "alice", "--group", "legal", "--token", tokens.admin], env).returncode == 0
    proc = start("review_cli", env)
    try:
        first = wait_for_task("review_cli")
        assert first.title == "Review ACME (pass 1)", "title rendered from the context at creation"
        again = cli(["tasks", "answer", first.id, "--set", "decision=again", "--token", tokens["alice"]], env)
        assert again.returncode == 0, again.stdout + again.stderr
        second = wait_for_task("review_cli", after={first.id})
        assert second.title == "Review ACME (pass 2)", "a new visit makes a new task with fresh values"
        done = cli(["tasks", "answer", second.id, "--set", "decision=approve", "--set", "notes=fine", "--token", tokens["alice"]], env)
        assert done.returncode == 0, done.stdout + done.stderr
        result = finish(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert result["status"] == "completed" and result["outcome"] == "done"
    assert result["context"]["decision"] == "approve" and result["context"]["notes"] == "fine"
    task = task_store.get_task(second.id)
    assert task.answered_by == "alice" and task.answered_via == "cli" and task.status == "completed"
    visits = [v.node_id for v in visit_store.visits_for_run(result["run_id"])]
    assert visits == ["prepare", "review", "prepare", "review", "done"]


def test_refusals_leave_the_run_paused(env, definitions, tokens):
    from flows.store import runs as run_store
    from flows.store import tasks as task_store

    (definitions / "review_refuse.yaml").write_text(review("review_refuse", four_eyes=True))
    cli(["users", "add", "bob", "--group", "legal", "--token", tokens.admin], env)
    cli(["users", "add", "mallory", "--group", "sales", "--token", tokens.admin], env)
    cli(["users", "add", "starter", "--group", "legal", "--token", tokens.admin], env)
    proc = start("review_refuse", env)
    try:
        task = wait_for_task("review_refuse")
        bad_option = cli(["tasks", "answer", task.id, "--set", "decision=maybe", "--token", tokens["bob"]], env)
        missing = cli(["tasks", "answer", task.id, "--set", "notes=hi", "--token", tokens["bob"]], env)
        outsider = cli(["tasks", "answer", task.id, "--set", "decision=approve", "--token", tokens["mallory"]], env)
        own_run = cli(["tasks", "answer", task.id, "--set", "decision=approve", "--token", tokens["starter"]], env)
        for refused in (bad_option, missing, outsider, own_run):
            assert refused.returncode == 1, refused.stdout + refused.stderr
        assert "maybe" in bad_option.stdout + bad_option.stderr
        assert "decision" in missing.stdout + missing.stderr
        time.sleep(1.5)
        assert task_store.get_task(task.id).status == "pending" and run_store.get_run(task.run_id).status == "paused"
        ok = cli(["tasks", "answer", task.id, "--set", "decision=reject", "--token", tokens["bob"]], env)
        assert ok.returncode == 0, ok.stdout + ok.stderr
        result = finish(proc)
        second = cli(["tasks", "answer", task.id, "--set", "decision=approve", "--token", tokens["bob"]], env)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert result["status"] == "completed" and result["outcome"] == "rejected"
    assert second.returncode == 1, "a task answered once cannot be answered again"
    assert task_store.get_task(task.id).answer["decision"] == "reject"
    actions = [e.action for e in task_store.task_events(task.id)]
    assert actions.count("refused") >= 4 and "answered" in actions


def test_answer_through_prefects_resume_api(env, definitions, tokens):
    from prefect.flow_runs import resume_flow_run

    from flows import people
    from flows.store import runs as run_store
    from flows.store import tasks as task_store

    people.add_user("bob", ["legal"])
    (definitions / "review_prefect.yaml").write_text(review("review_prefect"))
    proc = start("review_prefect", env)
    try:
        task = wait_for_task("review_prefect")
        run = run_store.get_run(task.run_id)
        wait_paused_in_prefect(run.prefect_flow_run_id)  # the task's row comes a moment before Prefect's pause
        with pytest.raises(RuntimeError):  # Prefect validates against the generated RunInput model
            resume_flow_run(run.prefect_flow_run_id, run_input={"decision": "perhaps", "answer_code": "code_x"})
        # the task is assigned (group:legal): the form asks an answer code (tests/humans/test_prefect_answers.py)
        code = cli(["tasks", "code", task.id, "--token", tokens["bob"]], env).stdout.strip()
        resume_flow_run(run.prefect_flow_run_id, run_input={"decision": "approve", "notes": "via prefect",
                                                            "answer_code": code})
        result = finish(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert result["status"] == "completed" and result["outcome"] == "done"
    task = task_store.get_task(task.id)
    assert task.answered_via == "prefect" and task.answered_by == "bob"
    assert task.answer["notes"] == "via prefect"


def test_timeout_takes_on_timeout(env, definitions):
    from flows.store import tasks as task_store

    text = review("review_timeout", timeout="timeout: 2\n    on_timeout: expired") + "  expired: {type: final}\n"
    (definitions / "review_timeout.yaml").write_text(text)
    proc = start("review_timeout", env)
    result = finish(proc)
    assert result["status"] == "completed" and result["outcome"] == "expired"
    tasks = task_store.tasks_for_run(result["run_id"])
    assert [t.status for t in tasks] == ["expired"]
