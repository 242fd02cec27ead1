"""Human tasks and their audit trail: lifecycle, closing, filters and visibility."""

from __future__ import annotations

import pytest

from flows.store import tasks as task_store
from flows.store.errors import StoreError, TaskConflict


def test_task_lifecycle_and_audit_trail(run, people):
    task = task_store.create_task(run.id, "approve", "Approve ACME?", description="**Amount** 10", assignee="group:legal",
                                  fields=[{"name": "ok", "type": "boolean", "required": True}], pause_key="pk-1")
    assert task_store.task_by_pause_key("pk-1").id == task.id
    claimed = task_store.claim_task(task.id, "ann")
    assert (claimed.status, claimed.claimed_by) == ("in_progress", "ann")
    assert task_store.claim_task(task.id, "ann").status == "in_progress"  # again: no-op
    with pytest.raises(TaskConflict, match="in_progress by ann"):
        task_store.claim_task(task.id, "bob")
    task_store.record_task_event(task.id, "refused", actor="ann", detail={"errors": ["ok is required"]})
    answered = task_store.answer_task(task.id, {"ok": True}, answered_by="ann", answered_via="cli")
    assert (answered.status, answered.answer, answered.answered_via) == ("completed", {"ok": True}, "cli")
    assert answered.answered_at is not None
    with pytest.raises(TaskConflict, match="already completed"):
        task_store.answer_task(task.id, {"ok": False}, answered_by="bob", answered_via="dashboard")
    assert [e.action for e in task_store.task_events(task.id)] == ["created", "claimed", "refused", "answered"]
    with pytest.raises(StoreError, match="answer channel"):
        task_store.answer_task(task.id, {}, answered_by="x", answered_via="carrier-pigeon")


def test_close_task(run):
    task = task_store.create_task(run.id, "approve", "t")
    assert task_store.close_task(task.id, "expired", reason="due").status == "expired"
    with pytest.raises(TaskConflict):
        task_store.close_task(task.id, "cancelled")
    with pytest.raises(StoreError):
        task_store.close_task(task.id, "completed")


def test_task_filters_and_visibility(run, people):
    legal = task_store.create_task(run.id, "a", "legal", assignee="group:legal")
    bobs = task_store.create_task(run.id, "b", "bob's", assignee="bob")
    anyone = task_store.create_task(run.id, "c", "anyone")
    done = task_store.create_task(run.id, "d", "done", assignee="ann")
    task_store.answer_task(done.id, {}, answered_by="ann", answered_via="api")
    task_store.claim_task(bobs.id, "bob")

    def ids(status="open", **kw):
        return {t.id for t in task_store.list_tasks(status, **kw)[0]}

    assert ids() == {legal.id, bobs.id, anyone.id}
    assert ids("pending") == {legal.id, anyone.id}
    assert ids("in_progress") == {bobs.id}
    assert ids("completed") == {done.id}
    assert ids("all") == {legal.id, bobs.id, anyone.id, done.id}
    assert ids("all", visible_to="ann") == {legal.id, anyone.id, done.id}
    assert ids("all", visible_to="bob") == {bobs.id, anyone.id}
    assert ids("all", visible_to="root") == ids("all")
    assert ids("all", visible_to="stranger") == {anyone.id}
    rows, total = task_store.list_tasks("all", limit=1)
    assert total == 4 and [t.id for t in rows] == [done.id]  # newest first
    assert [t.id for t in task_store.tasks_for_run(run.id)] == [legal.id, bobs.id, anyone.id, done.id]
    with pytest.raises(StoreError, match="task filter"):
        task_store.list_tasks("mine")
