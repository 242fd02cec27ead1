"""`trigger: user` transitions: the node ends with a task whose required `_next_node` select
lists its user exits; the answer routes the run (through the CLI or Prefect's resume API)."""

from __future__ import annotations

import time

import pytest
from test_pause_resume import cli, finish, start, wait_for_task

pytestmark = pytest.mark.prefect

CHOOSE = """
format_version: 1
process: {name}
initial: draft
context:
  schema:
    type: object
    properties:
      party: {{type: string}}
      counter: {{type: integer}}
    required: [party]
  initial: {{counter: 0}}
nodes:
  draft:
    type: tool
    tool: increment
    input: {{value: "{{{{ counter }}}}"}}
    writes: [counter]
    title: "Route {{{{ party }}}}"
    human_description: Pick where the draft goes.
    {assignee}
    transitions:
      - {{to: publish, trigger: user, label: Publish it}}
      - {{to: archive, trigger: user}}
      - {{to: hidden, trigger: user, guard: {{">": [{{var: counter}}, 5]}}}}
  publish: {{type: final}}
  archive: {{type: final}}
  hidden: {{type: final}}
"""


def choose(name: str, assignee: str = "") -> str:
    return CHOOSE.format(name=name, assignee=assignee)


@pytest.mark.parametrize("target", ["publish", "archive"])
def test_the_answer_picks_the_exit(env, definitions, target):
    from flows.store import tasks as task_store
    from flows.store import visits as visit_store

    name = f"choose_{target}"
    (definitions / f"{name}.yaml").write_text(choose(name))
    proc = start(name, env)
    try:
        task = wait_for_task(name)
        assert task.title == "Route ACME" and task.description == "Pick where the draft goes."
        assert task.assignee == "starter", "default assignee: the run's starter"
        (field,) = task.fields
        assert field["name"] == "_next_node" and field["type"] == "select" and field["required"] is True
        # the closed exit (its guard is false) is not offered
        assert field["options"] == ["publish", "archive"]
        assert field["option_labels"] == {"publish": "Publish it", "archive": "archive"}
        answered = cli(["tasks", "answer", task.id, "--set", f"_next_node={target}"], env)
        assert answered.returncode == 0, answered.stdout + answered.stderr
        result = finish(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert result["status"] == "completed" and result["outcome"] == target
    assert result["context"]["counter"] == 1, "the node's own body ran once"
    assert task_store.get_task(task.id).status == "completed"
    visits = visit_store.visits_for_run(result["run_id"])
    assert [v.node_id for v in visits] == ["draft", target]
    assert visits[0].next_node == target


def test_a_wrong_choice_is_refused_and_the_run_stays_paused(env, definitions, tokens):
    from prefect.flow_runs import resume_flow_run

    from flows.store import runs as run_store
    from flows.store import tasks as task_store

    (definitions / "choose_wrong.yaml").write_text(choose("choose_wrong", "assignee: group:legal"))
    cli(["users", "add", "lea", "--group", "legal", "--token", tokens.admin], env)
    proc = start("choose_wrong", env)
    try:
        task = wait_for_task("choose_wrong")
        assert task.assignee == "group:legal"
        for value in ("hidden", "nowhere"):
            refused = cli(["tasks", "answer", task.id, "--set", f"_next_node={value}", "--token", tokens["lea"]], env)
            assert refused.returncode == 1, refused.stdout + refused.stderr
            assert value in refused.stdout + refused.stderr
        time.sleep(1.5)
        assert task_store.get_task(task.id).status == "pending" and run_store.get_run(task.run_id).status == "paused"
        run = run_store.get_run(task.run_id)
        with pytest.raises(RuntimeError, match="hidden"):  # Prefect's form validates against the same options
            resume_flow_run(run.prefect_flow_run_id, run_input={"_next_node": "hidden", "answer_code": "code_x"})
        # assigned: the form asks an answer code
        code = cli(["tasks", "code", task.id, "--token", tokens["lea"]], env).stdout.strip()
        resume_flow_run(run.prefect_flow_run_id, run_input={"_next_node": "archive", "answer_code": code})
        result = finish(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert result["status"] == "completed" and result["outcome"] == "archive"
    assert task_store.get_task(task.id).answered_via == "prefect"
    assert task_store.get_task(task.id).answered_by == "lea"


FANOUT = """
format_version: 1
process: {name}
initial: each
context:
  schema:
    type: object
    properties:
      party: {{type: string}}
      items: {{type: array, items: {{type: string}}}}
      results: {{type: array}}
  initial: {{items: [a, b]}}
nodes:
  each:
    {body}
    writes: [results]
    transitions:
      - {{to: publish, trigger: user, label: Publish}}
      - {{to: archive, trigger: user}}
  publish: {{type: final}}
  archive: {{type: final}}
"""
FOREACH_BODY = """type: foreach
    foreach: items
    as: it
    node: {type: tool, tool: log, input: {message: "{{ it }}"}}
    collect: results"""
BRANCH_BODY = """type: branch
    branches:
      - {id: left, node: {type: tool, tool: log, input: {message: left}}}
      - {id: right, node: {type: tool, tool: log, input: {message: right}}}
    collect: results"""


@pytest.mark.parametrize("body", [FOREACH_BODY, BRANCH_BODY], ids=["foreach", "branch"])
def test_a_fan_out_node_asks_after_joining_and_the_answer_routes(env, definitions, body):
    """The choice comes after every item ran and was collected; the person sees the joined result."""
    name = f"choose_after_{body.split()[1]}"
    (definitions / f"{name}.yaml").write_text(FANOUT.format(name=name, body=body))
    proc = start(name, env)
    try:
        task = wait_for_task(name)
        assert task.fields[0]["options"] == ["publish", "archive"]
        answered = cli(["tasks", "answer", task.id, "--set", "_next_node=archive"], env)
        assert answered.returncode == 0, answered.stdout + answered.stderr
        result = finish(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert result["status"] == "completed" and result["outcome"] == "archive"
    assert len(result["context"]["results"]) == 2, "both items ran, once, before the choice"
