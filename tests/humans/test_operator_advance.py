"""An admin advances a paused run past the person it waits for: the task is withdrawn and the
live `ergon run` process, blocked in Prefect's pause, completes the visit towards the exit and
goes on — Prefect's flow run runs again and the remaining nodes are task runs as usual."""

from __future__ import annotations

import pytest

from test_pause_resume import finish, review, start, wait_for_task

pytestmark = pytest.mark.prefect


def test_an_admin_advances_a_paused_run_through_a_declared_exit(env, definitions, tokens):
    from flows import people
    from flows.runs import controls
    from flows.store import run_events
    from flows.store import tasks as task_store
    from flows.store import visits as visit_store

    # after the advance a tool node runs: a task run, which Prefect starts only in a running flow run
    text = review("review_adv").replace("  rejected: {type: final}\n", """  rejected:
    type: tool
    tool: increment
    input: {value: "{{ counter }}"}
    writes: [counter]
    transitions: [{to: closed}]
  closed: {type: final}
""")
    (definitions / "review_adv.yaml").write_text(text)
    people.add_user("ops", admin=True)
    people.add_user("lea")
    proc = start("review_adv", env)
    try:
        task = wait_for_task("review_adv")
        with pytest.raises(controls.ControlRefused, match="only admins"):
            controls.advance(task.run_id, "rejected", actor="lea", why="no")
        with pytest.raises(controls.ControlRefused, match="not a declared exit"):
            controls.advance(task.run_id, "nowhere", actor="ops", why="no")
        with pytest.raises(controls.ControlRefused, match="a person is being asked"):
            controls.skip_node(task.run_id, actor="ops", why="no")
        controls.advance(task.run_id, "rejected", actor="ops", why="the party withdrew")
        result = finish(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert result["status"] == "completed" and result["outcome"] == "closed", result
    assert result["context"]["counter"] == 2, "the tool node after the advance ran"
    assert "decision" not in result["context"], "no answer was written"
    closed = task_store.get_task(task.id)
    assert closed.status == "cancelled"
    review_visit = [v for v in visit_store.visits_for_run(task.run_id) if v.node_id == "review"][-1]
    assert (review_visit.status, review_visit.next_node) == ("completed", "rejected")
    # Prefect saw the flow run leave its pause and run again (not a Paused run doing work)
    from prefect.client.orchestration import get_client

    from flows.store import runs as run_store

    with get_client(sync_client=True) as client:
        states = [st.type.value for st in client.read_flow_run_states(run_store.require_run(task.run_id).prefect_flow_run_id)]
    assert states.index("RUNNING", states.index("PAUSED")) > states.index("PAUSED"), states
    rows = [(e.name, e.actor, e.outcome) for e in run_events.events_for_run(task.run_id, kind="command")]
    assert rows == [("advance", "lea", "refused"), ("advance", "ops", "refused"), ("skip_node", "ops", "refused"),
                    ("advance", "ops", "accepted")]
