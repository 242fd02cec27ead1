"""Human tasks and their audit trail (task events).

A task is created ``pending`` with a ``created`` event in the same transaction; claiming,
answering and closing lock the task row (``FOR UPDATE`` on PostgreSQL, SQLite's write lock up
front) and refuse with :class:`TaskConflict` when someone else got there first, so two channels
(CLI, dashboard, Prefect's UI, the API) can race for one task and exactly one wins. Every
change adds its event. Whether a user may act on a task is decided by the caller
(:mod:`flows.humans`); this module only enforces the state machine.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlmodel import Session, col, func, or_, select, update

from flows.store._common import add_row, check, get_row, page, require_row
from flows.store.db import session
from flows.store.errors import StoreError, TaskConflict
from flows.moments import announce
from flows.store.models import (
    TASK_ACTIONS,
    TASK_CHANNELS,
    TASK_OPEN,
    TASK_STATUSES,
    HumanTask,
    Membership,
    TaskAction,
    TaskChannel,
    TaskEvent,
    TaskStatus,
    User,
    utcnow,
)

#: The ``status`` filters :func:`list_tasks` takes: ``open`` (pending + in progress), ``all``, or
#: one task status.
TASK_FILTERS: dict[str, tuple[TaskStatus, ...] | None] = {
    "open": TASK_OPEN,
    "all": None,
    **{status: (status,) for status in TASK_STATUSES},
}


def create_task(
    run_id: str,
    node_id: str,
    title: str,
    *,
    visit_id: str | None = None,
    description: str | None = None,
    assignee: str | None = None,
    fields: Any = None,
    four_eyes: bool = False,
    due_at: datetime | None = None,
    pause_key: str | None = None,
    prefect_flow_run_id: str | None = None,
    actor: str | None = None,
) -> HumanTask:
    """Create a ``pending`` task and its ``created`` audit event."""
    task = HumanTask(run_id=run_id, visit_id=visit_id, node_id=node_id, title=title, description=description,
                     assignee=assignee, fields=fields or [], four_eyes=four_eyes, due_at=due_at, pause_key=pause_key,
                     prefect_flow_run_id=prefect_flow_run_id)
    with session(write=True) as s:
        s.add(task)
        s.flush()  # the event's foreign key needs the task row first
        s.add(TaskEvent(task_id=task.id, actor=actor, action="created", detail={"assignee": assignee}))
    announce("task.created", task)
    return task


def set_task_flow_run(task_id: str, prefect_flow_run_id: str) -> None:
    """Record which Prefect flow run waits for the task's answer (known once its subflow starts)."""
    with session(write=True) as s:
        s.exec(update(HumanTask).where(col(HumanTask.id) == task_id).values(prefect_flow_run_id=prefect_flow_run_id))


def set_task_pause_key(task_id: str, pause_key: str) -> None:
    """The key the task's run waits under now: a refused answer through Prefect makes the run
    pause again, under a new key (Prefect hands a used key's old answer straight back)."""
    with session(write=True) as s:
        s.exec(update(HumanTask).where(col(HumanTask.id) == task_id).values(pause_key=pause_key))


def reattach_task(task_id: str, visit_id: str | None, prefect_flow_run_id: str | None) -> HumanTask:
    """The visit (and Prefect flow run, None until it is known) that now waits for the task: a
    run that continues after its process stopped re-enters the visit that asked, and the task
    belongs to the new one."""
    with session(write=True) as s:
        task = require_row(s, HumanTask, task_id, lock=True)
        task.visit_id, task.prefect_flow_run_id = visit_id, prefect_flow_run_id
        s.add(task)
    return task


def release_open_tasks(run_id: str) -> list[str]:
    """The run's process stopped: no Prefect flow run waits for its open tasks any more. Forget
    those flow runs (an answer then never goes to a dead process's pause); returns their ids."""
    with session(write=True) as s:
        rows = s.exec(select(HumanTask).where(HumanTask.run_id == run_id, col(HumanTask.status).in_(TASK_OPEN),
                                              col(HumanTask.prefect_flow_run_id).is_not(None))).all()
        released = [row.prefect_flow_run_id for row in rows if row.prefect_flow_run_id]
        for row in rows:
            row.prefect_flow_run_id = None
            s.add(row)
    return released


def open_tasks_count(run_id: str) -> int:
    """How many of the run's tasks still wait for an answer."""
    with session() as s:
        return len(s.exec(select(HumanTask.id).where(HumanTask.run_id == run_id,
                                                     col(HumanTask.status).in_(TASK_OPEN))).all())


def get_task(task_id: str) -> HumanTask | None:
    return get_row(HumanTask, task_id)


def task_by_pause_key(pause_key: str) -> HumanTask | None:
    with session() as s:
        return s.exec(select(HumanTask).where(HumanTask.pause_key == pause_key)).first()


def list_tasks(
    status: str = "open",
    *,
    visible_to: str | None = None,
    run_id: str | None = None,
    limit: int = 50,
    offset: int = 0,
) -> tuple[list[HumanTask], int]:
    """One page of tasks, newest first, and the total matching.

    ``status`` is one of :data:`TASK_FILTERS`: ``open`` (pending + in progress), ``all`` or a task
    status. With ``visible_to``, only tasks that user may see: assigned to them, to one of their
    groups, or to nobody (admins see everything).
    """
    if status not in TASK_FILTERS:
        raise StoreError(f"task filter {status!r} is not one of: {', '.join(TASK_FILTERS)}")
    where: list[Any] = []
    if (statuses := TASK_FILTERS[status]) is not None:
        where.append(col(HumanTask.status).in_(statuses))
    if run_id is not None:
        where.append(col(HumanTask.run_id) == run_id)
    with session() as s:
        if visible_to is not None:
            where.extend(_visibility(s, visible_to))
        total = s.exec(select(func.count()).select_from(HumanTask).where(*where)).one()
        q = select(HumanTask).where(*where).order_by(col(HumanTask.created_at).desc(), col(HumanTask.id).desc())
        rows = s.exec(page(q, limit, offset)).all()
    return list(rows), int(total)


def _visibility(s: Session, user_name: str) -> list:
    user = s.get(User, user_name)
    if user is not None and user.is_admin:
        return []
    groups = s.exec(select(Membership.group_name).where(Membership.user_name == user_name)).all()
    assignees = [user_name, *(f"group:{g}" for g in groups)]
    return [or_(col(HumanTask.assignee).is_(None), col(HumanTask.assignee).in_(assignees))]


def tasks_for_run(run_id: str) -> list[HumanTask]:
    with session() as s:
        q = select(HumanTask).where(HumanTask.run_id == run_id).order_by(col(HumanTask.created_at), col(HumanTask.id))
        return list(s.exec(q).all())


def claim_task(task_id: str, user: str, *, now: datetime | None = None) -> HumanTask:
    """``user`` takes an open task (pending → in_progress). Taking it again is a no-op; taking
    a task someone else holds, or a closed one, raises :class:`TaskConflict`.

    Whether ``user`` may act on the task at all is decided by the caller (flows.humans).
    """
    now = now or utcnow()
    with session(write=True) as s:
        task = require_row(s, HumanTask, task_id, lock=True)
        if task.status == "in_progress" and task.claimed_by == user:
            return task
        if task.status != "pending":
            holder = f" by {task.claimed_by}" if task.claimed_by else ""
            raise TaskConflict(f"task {task_id} is {task.status}{holder}")
        task.status, task.claimed_by, task.claimed_at = "in_progress", user, now
        s.add(task)
        s.add(TaskEvent(task_id=task_id, actor=user, action="claimed", at=now))
    return task


def answer_task(
    task_id: str, answer: dict, *, answered_by: str, answered_via: TaskChannel, now: datetime | None = None
) -> HumanTask:
    """Record a validated answer (the caller validated it against the fields) and complete the
    task. Raises :class:`TaskConflict` when the task is no longer open (answered elsewhere)."""
    check(answered_via, TASK_CHANNELS, "answer channel")
    now = now or utcnow()
    with session(write=True) as s:
        task = require_row(s, HumanTask, task_id, lock=True)
        if task.status not in TASK_OPEN:
            raise TaskConflict(f"task {task_id} is already {task.status}")
        task.status, task.answer, task.answered_by, task.answered_via, task.answered_at = (
            "completed", answer, answered_by, answered_via, now)
        s.add(task)
        s.add(TaskEvent(task_id=task_id, actor=answered_by, action="answered",
                        detail={"via": answered_via}, at=now))
    announce("task.answered", task)
    return task


def close_task(
    task_id: str, status: TaskStatus, *, actor: str | None = None, reason: str | None = None
) -> HumanTask:
    """Close an open task as ``cancelled`` or ``expired`` (with an audit event)."""
    if status not in ("cancelled", "expired"):
        raise StoreError(f"close_task sets cancelled or expired, not {status!r}")
    with session(write=True) as s:
        task = require_row(s, HumanTask, task_id, lock=True)
        if task.status not in TASK_OPEN:
            raise TaskConflict(f"task {task_id} is already {task.status}")
        task.status = status
        s.add(task)
        s.add(TaskEvent(task_id=task_id, actor=actor, action=status, detail={"reason": reason}))
    if status == "expired":
        announce("task.expired", task)
    return task


def record_task_event(
    task_id: str, action: TaskAction, *, actor: str | None = None, detail: Any = None
) -> TaskEvent:
    """Add an audit event, e.g. ``refused`` with the validation errors of a wrong answer."""
    check(action, TASK_ACTIONS, "task action")
    return add_row(TaskEvent(task_id=task_id, actor=actor, action=action, detail=detail))


def task_events(task_id: str) -> list[TaskEvent]:
    with session() as s:
        q = select(TaskEvent).where(TaskEvent.task_id == task_id).order_by(col(TaskEvent.at), col(TaskEvent.id))
        return list(s.exec(q).all())
