"""The hot path's transactions on SQLite: the process's writer connection, straight on the driver."""

from __future__ import annotations

import multiprocessing
import sqlite3
from datetime import UTC, datetime

import pytest
from sqlalchemy.exc import IntegrityError

from flows.store import db
from flows.store import runs as run_store
from flows.store import visits as visit_store

T0 = datetime(2025, 1, 1, tzinfo=UTC)


def _committed_context(url: str, run_id: str) -> str | None:
    """The run's context as another connection sees it (what another process would read)."""
    other = sqlite3.connect(url.removeprefix("sqlite:///"))
    try:
        row = other.execute("SELECT context FROM runs WHERE id = ?", (run_id,)).fetchone()
        return row[0] if row else None
    finally:
        other.close()


def test_a_checkpoint_is_committed_when_it_returns_and_a_failed_one_leaves_the_writer_usable(store, run):
    visit = visit_store.start_visit(run.id, "a", "tool", sequence=1, now=T0)
    visit_store.close_visit(visit.id, run.id, started_at=T0, status="completed", context={"step": 1})
    assert _committed_context(store, run.id) == '{"step": 1}'

    lost = visit_store.start_visit("no-such-run", "b", "tool", sequence=2, now=T0)
    with pytest.raises(IntegrityError):
        visit_store.close_visit(lost.id, "no-such-run", started_at=T0, status="completed", context={"x": 1})
    writer = db._writers[db.get_engine()][1].connection.driver_connection
    assert not writer.in_transaction  # rolled back, not left open holding SQLite's write lock

    after = visit_store.start_visit(run.id, "c", "tool", sequence=3, now=T0)
    visit_store.close_visit(after.id, run.id, started_at=T0, status="completed", context={"step": 3})
    assert _committed_context(store, run.id) == '{"step": 3}'
    assert [v.node_id for v in visit_store.visits_for_run(run.id)] == ["a", "c"]


def test_dispose_all_closes_the_writer_connection(store, run):
    visit_store.record_llm_call(run.id, "openai/m", tokens_in=1)
    writer = db._writers[db.get_engine()][1].connection.driver_connection
    db.dispose_all()
    assert db._writers == {}
    with pytest.raises(sqlite3.ProgrammingError):  # closed: a test's next store gets its own
        writer.execute("SELECT 1")


def _checkpoint_in_child(run_id: str, parent_writer_id: int, done) -> None:  # type: ignore[no-untyped-def]
    visit = visit_store.start_visit(run_id, "child", "tool", sequence=2, now=T0)
    visit_store.close_visit(visit.id, run_id, started_at=T0, status="completed", context={"by": "child"})
    child_writer = db._writers[db.get_engine()][1].connection.driver_connection
    done.put(id(child_writer) != parent_writer_id)


def test_a_forked_process_writes_on_a_connection_of_its_own(store, run):
    """SQLite connections must not cross a fork: a child (a worker forking its flow runs) opens its own."""
    first = visit_store.start_visit(run.id, "parent", "tool", sequence=1, now=T0)
    visit_store.close_visit(first.id, run.id, started_at=T0, status="completed", context={"by": "parent"})
    parent_writer = db._writers[db.get_engine()][1].connection.driver_connection

    ctx = multiprocessing.get_context("fork")
    done = ctx.Queue()
    child = ctx.Process(target=_checkpoint_in_child, args=(run.id, id(parent_writer), done))
    child.start()
    child.join(60)
    assert child.exitcode == 0
    assert done.get(timeout=5) is True
    assert _committed_context(store, run.id) == '{"by": "child"}'
    # the parent's connection still works after the child wrote and exited
    last = visit_store.start_visit(run.id, "parent-again", "tool", sequence=3, now=T0)
    visit_store.close_visit(last.id, run.id, started_at=T0, status="completed", context={"by": "parent"})
    assert [v.node_id for v in visit_store.visits_for_run(run.id)] == ["parent", "child", "parent-again"]
    assert run_store.get_run(run.id).context == {"by": "parent"}
