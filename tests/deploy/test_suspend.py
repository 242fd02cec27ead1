"""A human task under a deployment suspends the run: the flow-run process exits, the answer
reschedules the same flow run, a worker runs the flow body again from the top, and the run
completes from its checkpoint without repeating a completed visit or creating a second task —
also when the worker that ran it was killed (SIGKILL) meanwhile and a new one picks it up."""

from __future__ import annotations

import pytest

from deploy_helpers import Worker, cli, deploy, flow_run, pid_alive, run_in, start_deployment, wait_for
from testing_tools import marks

pytestmark = pytest.mark.prefect

APPROVAL = """
format_version: 1
process: approval
initial: a
context:
  schema:
    type: object
    properties:
      party: {type: string}
      last: {type: string}
      decision: {type: string}
    required: [party]
nodes:
  a: {type: tool, tool: mark, input: {name: a}, writes: [last], transitions: [{to: review}]}
  review:
    type: human_task
    task:
      title: "Approve {{ party }}"
      fields:
        - {name: decision, type: select, required: true, options: [approve, reject]}
    writes: [decision]
    transitions: [{to: c}]
  c: {type: tool, tool: mark, input: {name: c}, writes: [last], transitions: [{to: done}]}
  done: {type: final}
"""


def test_a_human_task_suspends_under_a_deployment_and_resumes_from_the_checkpoint(deploy_env, definitions, pool,
                                                                                    tmp_path, tokens):
    from flows.store import runs as run_store
    from flows.store import tasks as task_store
    from flows.store import visits as visit_store

    (definitions / "approval.yaml").write_text(APPROVAL)
    deploy("approval", pool, deploy_env, tmp_path / "prefect.yaml")
    worker = Worker(pool, deploy_env, tmp_path / "worker.log").start()
    try:
        prefect_run = start_deployment("approval/approval", {"party": "ACME"})
        run = wait_for("the run to pause on its task", run_in(prefect_run.id, "paused"), diagnose=worker.tail)
        suspended = wait_for("Prefect to show the run suspended", lambda: (
            (s := flow_run(prefect_run.id).state).name == "Suspended" and s), diagnose=worker.tail)
        assert suspended.is_paused()
        first_pid = run.pid
        wait_for("the suspended run's process to exit", lambda: not pid_alive(first_pid), timeout=60)
        [task] = task_store.tasks_for_run(run.id)
        assert task.status == "pending" and task.title == "Approve ACME"
        assert [(v.node_id, v.status) for v in visit_store.visits_for_run(run.id)] == [("a", "completed"), ("review", "paused")]

        worker.kill()  # nothing of the waiting run lives on a machine any more
        answered = cli(["tasks", "answer", task.id, "--set", "decision=approve", "--token", tokens["lea"]], deploy_env)
        assert answered.returncode == 0, answered.stdout + answered.stderr
        worker.start()  # a new worker picks the resumed run up

        done = wait_for("the resumed run to complete", lambda: (
            (r := run_store.get_run(run.id)).status in ("completed", "failed", "crashed") and r), diagnose=worker.tail)
        assert done.status == "completed" and done.outcome == "done", done.error
        assert wait_for("Prefect to complete the flow run",
                        lambda: flow_run(prefect_run.id).state.is_completed(), diagnose=worker.tail)
    finally:
        worker.stop()
    assert done.context["decision"] == "approve"
    assert done.pid != first_pid, "the body ran again in a new process"
    assert marks() == ["a", "c"], "the completed visit `a` was not executed again after the resume"
    visits = [(v.node_id, v.status) for v in visit_store.visits_for_run(run.id)]
    assert visits == [("a", "completed"), ("review", "paused"), ("review", "completed"), ("c", "completed"),
                      ("done", "completed")], visits
    [task] = task_store.tasks_for_run(run.id)  # the re-entered visit found its task: no second one
    assert task.status == "completed" and task.answered_by == "lea" and task.answer == {"decision": "approve"}
    assert done.trigger == "api" and done.prefect_flow_run_id == str(prefect_run.id)


CHOICE = """
format_version: 1
process: choice
initial: pick
context:
  schema:
    type: object
    properties:
      last: {type: string}
nodes:
  pick:
    type: tool
    tool: mark
    input: {name: pick}
    writes: [last]
    transitions:
      - {to: publish, trigger: user, label: Publish it}
      - {to: archive, trigger: user}
  publish: {type: tool, tool: mark, input: {name: publish}, writes: [last], transitions: [{to: done}]}
  archive: {type: final}
  done: {type: final}
"""


def test_a_suspended_user_choice_does_not_run_its_node_again(deploy_env, definitions, pool, tmp_path, tokens):
    """The node's own work (a tool here) happened before the person was asked; resuming the
    suspended run must route with that result, not execute the tool a second time."""
    from flows.store import runs as run_store
    from flows.store import tasks as task_store
    from flows.store import visits as visit_store

    (definitions / "choice.yaml").write_text(CHOICE)
    deploy("choice", pool, deploy_env, tmp_path / "prefect.yaml")
    worker = Worker(pool, deploy_env, tmp_path / "worker.log").start()
    try:
        prefect_run = start_deployment("choice/choice", {})
        run = wait_for("the run to pause on the choice", run_in(prefect_run.id, "paused"), diagnose=worker.tail)
        wait_for("Prefect to show the run suspended", lambda: flow_run(prefect_run.id).state.name == "Suspended",
                 diagnose=worker.tail)
        wait_for("the suspended run's process to exit", lambda: not pid_alive(run.pid), timeout=60)
        [task] = task_store.tasks_for_run(run.id)
        answered = cli(["tasks", "answer", task.id, "--set", "_next_node=publish", "--token", tokens["lea"]], deploy_env)
        assert answered.returncode == 0, answered.stdout + answered.stderr
        done = wait_for("the resumed run to complete", lambda: (
            (r := run_store.get_run(run.id)).status in ("completed", "failed", "crashed") and r), diagnose=worker.tail)
    finally:
        worker.stop()
    assert done.status == "completed" and done.outcome == "done", done.error
    assert marks() == ["pick", "publish"], "the tool of the choosing node ran again after the resume"
    assert done.context["last"] == "publish"
    visits = [(v.node_id, v.status) for v in visit_store.visits_for_run(run.id)]
    assert visits == [("pick", "paused"), ("pick", "completed"), ("publish", "completed"), ("done", "completed")], visits
    assert len(task_store.tasks_for_run(run.id)) == 1


def test_a_refused_answer_through_prefect_suspends_the_run_again_with_the_reason(deploy_env, definitions, pool,
                                                                                 tmp_path, tokens):
    """Under a deployment the engine checks a Prefect-side answer when the flow body runs again:
    a wrong token is refused (audited), the run suspends again under a new key with the reason
    above the form, and the right token's answer completes it — recorded as that user's."""
    from prefect.flow_runs import resume_flow_run
    from prefect.input.actions import read_flow_run_input

    from flows import people
    from flows.store import runs as run_store
    from flows.store import tasks as task_store

    people.add_user("lea", ["legal"])
    (definitions / "approval.yaml").write_text(APPROVAL.replace('title: "Approve {{ party }}"',
                                                                'title: "Approve {{ party }}"\n      assignee: group:legal'))
    deploy("approval", pool, deploy_env, tmp_path / "prefect.yaml")
    worker = Worker(pool, deploy_env, tmp_path / "worker.log").start()

    def suspended_keyset(other_than=None):
        state = wait_for("Prefect to show the run suspended", lambda: (
            (s := flow_run(prefect_run.id).state).name == "Suspended" and s.state_details.run_input_keyset != other_than
            and read_flow_run_input(s.state_details.run_input_keyset["schema"], flow_run_id=prefect_run.id) is not None
            and s), diagnose=worker.tail)
        return state.state_details.run_input_keyset

    try:
        prefect_run = start_deployment("approval/approval", {"party": "ACME"})
        first = suspended_keyset()
        run = run_store.get_run_by_prefect_id(str(prefect_run.id))
        [task] = task_store.tasks_for_run(run.id)
        resume_flow_run(prefect_run.id, run_input={"decision": "approve", "answer_code": "code_forged-000000000000"})
        again = suspended_keyset(other_than=first)
        description = read_flow_run_input(again["description"], flow_run_id=prefect_run.id)
        assert description.startswith("**Ergon refused the last answer:** the answer code was refused"), description
        assert task_store.get_task(task.id).status == "pending"
        assert [e.action for e in task_store.task_events(task.id)] == ["created", "refused"]
        code = cli(["tasks", "code", task.id, "--token", tokens["lea"]], deploy_env)
        assert code.returncode == 0, code.stdout + code.stderr
        resume_flow_run(prefect_run.id, run_input={"decision": "approve", "answer_code": code.stdout.strip()})
        done = wait_for("the resumed run to complete", lambda: (
            (r := run_store.get_run(run.id)).status in ("completed", "failed", "crashed") and r), diagnose=worker.tail)
    finally:
        worker.stop()
    assert done.status == "completed" and done.context["decision"] == "approve", done.error
    assert marks() == ["a", "c"], "no completed visit ran twice"
    [task] = task_store.tasks_for_run(run.id)
    assert task.answered_by == "lea" and task.answered_via == "prefect"
    assert read_flow_run_input(again["response"], flow_run_id=prefect_run.id)["answer_code"] == "(removed by Ergon)"
