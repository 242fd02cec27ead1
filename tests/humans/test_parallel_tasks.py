"""Human tasks open at the same time in one run (a pipeline's parallel nodes, a foreach over
sub-processes) pause and resume independently, in any order; cancelling a paused run closes its
tasks and ends the waiting process."""

from __future__ import annotations

import time

import pytest

from test_pause_resume import cli, finish

pytestmark = pytest.mark.prefect

APPROVALS = """
kind: pipeline
name: two_approvals
context:
  schema:
    type: object
    properties:
      party: {type: string}
      legal_ok: {type: string}
      finance_ok: {type: string}
      summary: {type: string}
    required: [party]
nodes:
  legal:
    type: human_task
    task:
      title: "Legal review of {{ party }}"
      fields: [{name: legal_ok, type: select, required: true, options: ["yes", "no"]}]
    writes: [legal_ok]
  finance:
    type: human_task
    task:
      title: "Finance review of {{ party }}"
      fields: [{name: finance_ok, type: select, required: true, options: ["yes", "no"]}]
    writes: [finance_ok]
  join:
    type: tool
    needs: [legal, finance]
    config:
      context_update: {summary: "legal={{ legal_ok }} finance={{ finance_ok }}"}
    writes: [summary]
"""

ONE_APPROVAL = """
format_version: 1
process: one_approval
initial: ask
context:
  schema:
    type: object
    properties:
      party: {type: string}
      approved: {type: boolean}
    required: [party]
nodes:
  ask:
    type: human_task
    task:
      title: "Approve {{ party }}?"
      fields: [{name: approved, type: boolean, required: true}]
    writes: [approved]
    transitions: [{to: done}]
  done: {type: final}
"""

FAN_OUT = """
format_version: 1
process: approve_all
initial: each
context:
  schema:
    type: object
    properties:
      party: {type: string}
      parties: {type: array, items: {type: string}}
      results: {type: array}
  initial: {parties: [north, south]}
nodes:
  each:
    type: foreach
    foreach: parties
    as: who
    item_id: "{{ who }}"
    node:
      type: process
      process: one_approval
      input: {party: "{{ who }}"}
      returns: {from: context.approved}
    collect: results
    writes: [results]
    transitions: [{to: done}]
  done: {type: final}
"""

BRANCHES = """
format_version: 1
process: two_desks
initial: both
context:
  schema:
    type: object
    properties:
      party: {type: string}
      reviews: {type: array}
    required: [party]
nodes:
  both:
    type: branch
    branches:
      - {id: legal, node: {type: process, process: one_approval, input: {party: "legal for {{ party }}"},
                           returns: {from: context.approved}}}
      - {id: finance, node: {type: process, process: one_approval, input: {party: "finance for {{ party }}"},
                             returns: {from: context.approved}}}
    collect: {into: reviews, include: [branch_id, output]}
    writes: [reviews]
    transitions: [{to: done}]
  done: {type: final}
"""


def wait_for_open_tasks(count: int, timeout: float = 90.0) -> list:
    from flows.store import tasks as task_store

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        rows, _ = task_store.list_tasks(status="pending")
        if len(rows) >= count and all(r.prefect_flow_run_id for r in rows):
            return sorted(rows, key=lambda t: t.title)
        time.sleep(0.2)
    raise AssertionError(f"expected {count} pending tasks")


def start(name: str, env: dict):
    import subprocess
    import sys

    return subprocess.Popen([sys.executable, "-m", "flows.cli", "run", name, "--input", "party=ACME", "--json"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def answer(task_id: str, value: str, env: dict, field: str, tokens) -> None:
    done = cli(["tasks", "answer", task_id, "--set", f"{field}={value}", "--token", tokens["root"]], env)
    assert done.returncode == 0, done.stdout + done.stderr


def test_parallel_pipeline_tasks_resume_independently(env, definitions, tokens):
    from flows.store import runs as run_store
    from flows.store import tasks as task_store
    from flows.store import visits as visit_store

    (definitions / "two_approvals.yaml").write_text(APPROVALS)
    assert cli(["users", "add", "root", "--admin", "--token", tokens.admin], env).returncode == 0
    proc = start("two_approvals", env)
    try:
        finance, legal = wait_for_open_tasks(2)
        assert finance.prefect_flow_run_id != legal.prefect_flow_run_id, "each task waits in its own subflow"
        run_id = legal.run_id
        assert run_store.get_run(run_id).status == "paused"
        answer(finance.id, "no", env, "finance_ok", tokens)  # the second task asked is answered first
        time.sleep(1.5)
        assert task_store.get_task(legal.id).status == "pending"
        assert run_store.get_run(run_id).status == "paused", "still waiting for the other task"
        answer(legal.id, "yes", env, "legal_ok", tokens)
        result = finish(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert result["status"] == "completed", result
    assert result["context"]["summary"] == "legal=yes finance=no"
    visits = {v.node_id: v.status for v in visit_store.visits_for_run(result["run_id"])}
    assert visits == {"legal": "completed", "finance": "completed", "join": "completed"}


def test_foreach_of_sub_processes_with_tasks(env, definitions, tokens):
    from flows.store import runs as run_store

    (definitions / "one_approval.yaml").write_text(ONE_APPROVAL)
    (definitions / "approve_all.yaml").write_text(FAN_OUT)
    assert cli(["users", "add", "root", "--admin", "--token", tokens.admin], env).returncode == 0
    proc = start("approve_all", env)
    try:
        north, south = wait_for_open_tasks(2)
        assert {north.title, south.title} == {"Approve north?", "Approve south?"}
        answer(south.id, "false", env, "approved", tokens)
        answer(north.id, "true", env, "approved", tokens)
        result = finish(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert result["status"] == "completed", result
    assert result["context"]["results"] == [True, False], "collected in item order, whatever the answer order"
    children = run_store.child_runs(result["run_id"])
    assert sorted(c.status for c in children) == ["completed", "completed"]


def test_cancelling_a_paused_run_closes_its_task_and_ends_the_wait(env, definitions, tokens):
    from flows.store import runs as run_store
    from flows.store import tasks as task_store

    (definitions / "one_approval.yaml").write_text(ONE_APPROVAL)
    proc = start("one_approval", env)
    try:
        (task,) = wait_for_open_tasks(1)
        cancelled = cli(["runs", "cancel", task.run_id], env)
        assert cancelled.returncode == 0, cancelled.stderr
        assert task_store.get_task(task.id).status == "cancelled"
        result = finish(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert result["status"] == "cancelled", result
    assert run_store.get_run(task.run_id).status == "cancelled"
    late = cli(["tasks", "answer", task.id, "--set", "approved=true", "--token", tokens["starter"]], env)
    assert late.returncode != 0, "a cancelled task takes no answer"


def test_two_tasks_open_at_once_inside_a_branch(env, definitions, tokens):
    (definitions / "one_approval.yaml").write_text(ONE_APPROVAL)
    (definitions / "two_desks.yaml").write_text(BRANCHES)
    assert cli(["users", "add", "root", "--admin", "--token", tokens.admin], env).returncode == 0
    proc = start("two_desks", env)
    try:
        finance, legal = wait_for_open_tasks(2)
        assert (finance.title, legal.title) == ("Approve finance for ACME?", "Approve legal for ACME?")
        assert finance.prefect_flow_run_id != legal.prefect_flow_run_id
        answer(legal.id, "true", env, "approved", tokens)
        answer(finance.id, "false", env, "approved", tokens)
        result = finish(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert result["status"] == "completed", result
    assert result["context"]["reviews"] == [{"branch_id": "legal", "output": True},
                                            {"branch_id": "finance", "output": False}]


def test_a_task_title_with_braces_waits_in_its_subflow(env, definitions, tokens):
    # Prefect formats a flow run's name with the flow's parameters: the title of a task that
    # shows a rendered object ("{'x': 1}") once failed the node with a KeyError
    import subprocess
    import sys

    (definitions / "two_approvals.yaml").write_text(APPROVALS)
    assert cli(["users", "add", "root", "--admin", "--token", tokens.admin], env).returncode == 0
    proc = subprocess.Popen([sys.executable, "-m", "flows.cli", "run", "two_approvals", "--input", "party={'x': 1} {}",
                             "--json"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        finance, legal = wait_for_open_tasks(2)
        assert legal.title == "Legal review of {'x': 1} {}"
        answer(finance.id, "yes", env, "finance_ok", tokens)
        answer(legal.id, "yes", env, "legal_ok", tokens)
        result = finish(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert result["status"] == "completed", result
