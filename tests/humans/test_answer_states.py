"""Which runs can take an answer (flows.runs.answers), on the store alone: a run waiting in a
live process or suspended, a run whose process died while it waited, and runs that are over."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys

import pytest

from flows import humans
from flows.runs import answers
from flows.store import runs as run_store
from flows.store import tasks as task_store
from flows.store import visits as visit_store
from human_fields import FIELDS


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _waiting_run(*, visit_status: str, parent_run_id: str | None = None):
    """A paused run and its task; the process that ran it is gone. ``visit_status`` is its
    waiting visit's: ``running`` (a process blocked in it) or ``paused`` (it suspended)."""
    run = run_store.create_run("contract_review", started_by="starter", parent_run_id=parent_run_id)
    run_store.set_run_status(run.id, "running", pid=_dead_pid())
    visit = visit_store.start_visit(run.id, "legal_review", "human_task", input={})
    if visit_status != "running":
        visit_store.finish_visit(visit.id, visit_status)
    task = task_store.create_task(run.id, "legal_review", "Review", visit_id=visit.id, assignee="group:legal",
                                  fields=FIELDS, prefect_flow_run_id="0c6f0e4e-0000-0000-0000-000000000000")
    run_store.set_run_status(run.id, "paused")
    return run, task


@pytest.fixture(autouse=True)
def _no_prefect(monkeypatch):
    """These runs have no Prefect flow runs: marking them crashed there is not this test's subject."""
    import flows.prefect.leftovers as leftovers

    monkeypatch.setattr(leftovers, "mark_crashed", lambda ids, message: None)


def test_a_paused_run_whose_blocked_process_died_is_found_and_resumable(people):
    run, task = _waiting_run(visit_status="running")
    state = answers.task_run_state(task)
    assert state.state == "resumable" and "stopped while it waited" in state.reason
    assert run_store.get_run(run.id).status == "crashed"
    assert task_store.get_task(task.id).prefect_flow_run_id is None, "no answer goes to the dead process's pause"
    assert task_store.get_task(task.id).status == "pending", "its answer is still wanted"


def test_a_suspended_run_has_no_process_and_still_waits(people):
    run, task = _waiting_run(visit_status="paused")
    assert answers.task_run_state(task).state == "waiting"
    assert run_store.get_run(run.id).status == "paused", "a suspended run is not a crashed one"


@pytest.mark.parametrize("status", ["completed", "failed", "cancelled"])
def test_a_task_of_a_run_that_is_over_is_closed_and_refused(people, status):
    """A run that ended without closing its task (ended before tasks closed with their runs)."""
    run, task = _waiting_run(visit_status="paused")
    if status == "completed":
        run_store.set_run_status(run.id, "running")
    run_store.set_run_status(run.id, status, error="boom" if status == "failed" else None)
    with pytest.raises(humans.TaskRefused, match=f"cannot be answered: its run {run.id} ended {status}"):
        answers.answer(task.id, "ann", {"decision": "approve"})
    closed = task_store.get_task(task.id)
    assert closed.status == "cancelled" and closed.answer in (None, {}) and closed.answered_by is None
    assert [e.action for e in task_store.task_events(task.id)] == ["created", "cancelled", "refused"]


def test_a_stopped_sub_process_closes_its_tasks(people):
    parent = run_store.create_run("parent", started_by="starter")
    run, task = _waiting_run(visit_status="running", parent_run_id=parent.id)
    state = answers.task_run_state(task)
    assert state.state == "over" and f"resuming run {parent.id}" in state.reason
    assert task_store.get_task(task.id).status == "cancelled"


def test_an_invalid_answer_to_a_stopped_run_resumes_nothing(people, monkeypatch, prefect_api):
    # Prefect's API is asked whether the run's definition has a deployment to resume through
    started = []
    monkeypatch.setattr("flows.runs.detached.spawn_ergon", lambda args, **kw: started.append(args))
    run, task = _waiting_run(visit_status="running")
    with pytest.raises(humans.TaskRefused):
        answers.answer(task.id, "ann", {"decision": "maybe"})
    assert started == [] and task_store.get_task(task.id).status == "pending"
    result = answers.answer(task.id, "ann", {"decision": "approve"})
    assert result.delivered == "checkpoint" and started == [["runs", "resume", run.id]]


@contextlib.contextmanager
def _prefect_api_at(url: str):
    """This process pointed at ``url``, then back at the session's API. Ergon exports the API it
    uses into Prefect's settings (:func:`flows.prefect.server.ensure_api`), which outlive an
    environment variable put back by ``monkeypatch``: the later tests would meet the dead API."""
    from flows.prefect import server

    session = os.environ["PREFECT_API_URL"]
    os.environ["PREFECT_API_URL"] = url
    try:
        yield
    finally:
        os.environ["PREFECT_API_URL"] = session
        server.ensure_api()  # the session's API again, in Prefect's settings too


def test_an_answer_to_a_stopped_run_waits_when_prefect_does_not_answer(people, monkeypatch):
    """The user's Prefect API is down: the answer is recorded, nothing is started, and the answerer
    is told in one line that the run was not resumed and how to resume it."""
    import socket

    started = []
    monkeypatch.setattr("flows.runs.detached.spawn_ergon", lambda args, **kw: started.append(args))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens there
    run, task = _waiting_run(visit_status="running")
    with _prefect_api_at(f"http://127.0.0.1:{port}/api"):
        result = answers.answer(task.id, "ann", {"decision": "approve"})
    assert task_store.get_task(task.id).status == "completed" and started == []
    assert result.delivered == "checkpoint" and "was not resumed" in result.message
    [error] = result.errors
    assert "cannot reach Prefect's API" in error and f"ergon runs resume {run.id}" in error, error
    assert run_store.get_run(run.id).status == "crashed", "it resumes from its checkpoint when asked"
