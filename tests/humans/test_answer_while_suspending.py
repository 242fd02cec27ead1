"""An answer given while the run is still suspending is the answer when the flow body comes back.

Under a deployment the run shows ``paused`` as soon as its task is recorded, a moment before the
visit that asked has finished suspending (its end is written as the process unwinds). A person
answering in that moment resumes the flow run (Prefect takes the answer once the run is
Suspended); the re-entered visit must take that task and its answer, not ask a second time —
found by the fleet test (``tests/cluster/test_fleet.py``), where an answer came 0.26 s before
the suspended visit's end and the run asked again.
"""

from __future__ import annotations

from datetime import timedelta

from flows.runtime.bodies.human_task import reentered_task
from flows.store import runs as run_store
from flows.store import tasks as task_store
from flows.store import visits as visit_store
from flows.store.models import utcnow


def _suspended_visit_answered(answered_before_end: bool) -> tuple[str, str, str]:
    """A run whose ``review`` visit suspended on a task, answered before or after the visit's end
    was written; (run id, the task's id, the re-entered visit's id)."""
    run = run_store.create_run("suspending", content={"kind": "test"})
    visit = visit_store.start_visit(run.id, "review", "human_task")
    task = task_store.create_task(run.id, "review", "Review", visit_id=visit.id, fields=[])
    visit_store.mark_visit_suspended(visit.id)
    now = utcnow()
    ended = now + timedelta(seconds=1) if answered_before_end else now - timedelta(seconds=1)
    task_store.answer_task(task.id, {"decision": "approve"}, answered_by="ops", answered_via="dashboard", now=now)
    visit_store.close_visit(visit.id, run.id, started_at=visit.started_at, status="paused",
                            error="RunSuspended: suspended until the task is answered")
    with_end = visit_store.get_visit(visit.id)
    assert with_end is not None and with_end.status == "paused"
    _set_ended(visit.id, ended)
    again = visit_store.start_visit(run.id, "review", "human_task")
    return run.id, task.id, again.id


def _set_ended(visit_id: str, at) -> None:
    from sqlmodel import update

    from flows.store.db import session
    from flows.store.models import NodeVisit

    with session(write=True) as s:
        s.exec(update(NodeVisit).where(NodeVisit.id == visit_id).values(ended_at=at))  # type: ignore[arg-type]


def test_an_answer_given_while_the_visit_suspended_is_taken_by_the_reentered_visit(store):
    run_id, task_id, visit_id = _suspended_visit_answered(answered_before_end=True)
    found = reentered_task(run_id, "review", visit_id)
    assert found is not None and found.id == task_id, "the re-entered visit asked a second time"
    assert found.answer == {"decision": "approve"}


def test_an_answer_given_after_the_visit_suspended_is_taken_too(store):
    run_id, task_id, visit_id = _suspended_visit_answered(answered_before_end=False)
    found = reentered_task(run_id, "review", visit_id)
    assert found is not None and found.id == task_id
