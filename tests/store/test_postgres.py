"""The same migrations and queries on PostgreSQL (JSONB, timestamptz, row locks).

Needs ``ERGON_TEST_POSTGRES_URL`` (``postgresql+psycopg://user@host:port/db``) naming a database
the test may create tables in. The tables are created by the migrations and left in place; rows
are tagged with a unique definition name so that reruns do not see each other.
"""

from __future__ import annotations

import os
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest
from alembic import command

from flows.store import db
from flows.store import artifacts as artifact_store
from flows.store import export as export_store
from flows.store import runs as run_store
from flows.store import visits as visit_store

URL = os.environ.get("ERGON_TEST_POSTGRES_URL")

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.skipif(not URL, reason="set ERGON_TEST_POSTGRES_URL=postgresql+psycopg://user@host:port/db to run"),
]


@pytest.fixture
def pg(monkeypatch):
    monkeypatch.setenv("ERGON_DATABASE_URL", URL)
    db.init_db(URL)
    yield URL
    db.dispose_all()


def test_migrations_match_the_models_on_postgres(pg):
    command.check(db.alembic_config(pg))
    with db.get_engine(pg).connect() as conn:
        kind = conn.exec_driver_sql(
            "select data_type from information_schema.columns where table_name='runs' and column_name='context'"
        ).scalar()
        tz = conn.exec_driver_sql(
            "select data_type from information_schema.columns where table_name='runs' and column_name='created_at'"
        ).scalar()
    assert kind == "jsonb" and tz == "timestamp with time zone"


def test_round_trip_on_postgres(pg):
    name = f"pg-{uuid.uuid4().hex[:8]}"
    run = run_store.create_run(name, content={"process": name}, inputs={"a": 1}, context={"a": 1, "nested": {"b": [1]}})
    run_store.set_run_status(run.id, "running")
    visit = visit_store.start_visit(run.id, "n", "agent", input={"q": "ü"})
    visit_store.record_llm_call(run.id, "offline/echo", visit_id=visit.id, tokens_in=2, tokens_out=3, cost_usd=0.5)
    visit_store.finish_visit(visit.id, output={"ok": True}, context_diff=[{"op": "add", "path": "/x", "old": None, "new": 1}])
    artifact_store.record_artifact(run.id, "k", "json", {"v": 1})
    artifact_store.record_artifact(run.id, "k", "json", {"v": 2})
    run_store.set_run_status(run.id, "completed", outcome="done")

    got = run_store.get_run(run.id)
    assert (got.status, got.outcome, got.context, got.tokens, got.cost_usd) == (
        "completed", "done", {"a": 1, "nested": {"b": [1]}}, 5, 0.5)
    assert got.created_at.utcoffset() == timedelta(0)
    assert [a.version for a in artifact_store.artifacts_for_run(run.id)] == [1, 2]
    rows, total = run_store.list_runs(definition=name, status="completed")
    assert total == 1 and rows[0].id == run.id
    assert export_store.export_run(run.id)["visits"][0]["input"] == {"q": "ü"}


def test_engine_hot_path_on_postgres(pg):
    """The engine's Core statements (visit start with its own sequence, close with the context and
    RETURNING the run's status) and the LLM reuse lookup (IS NOT DISTINCT FROM) on PostgreSQL."""
    from flows.llm import records
    from flows.llm.types import LlmRequest

    name = f"pg-{uuid.uuid4().hex[:8]}"
    run = run_store.create_run(name, content={"process": name}, inputs={})
    run_store.set_run_status(run.id, "running")
    first = visit_store.start_visit(run.id, "ask", "interaction", sequence=1, item_key=None)
    visit_store.record_llm_call(run.id, "m", visit_id=first.id, response={"content": "hi"}, cassette_key="k1")
    visit_store.close_visit(first.id, run.id, started_at=first.started_at, status="failed", error="boom")
    again = visit_store.start_visit(run.id, "ask", "interaction", sequence=2)
    reused = records.reusable(LlmRequest(messages=[], run_id=run.id, visit_id=again.id), "k1")
    assert reused is not None and reused.content == "hi"
    status = visit_store.close_visit(again.id, run.id, started_at=again.started_at, status="completed", context={"a": 2},
                                     context_diff=[{"op": "add", "path": "/a", "old": None, "new": 2}])
    assert status == "running"
    assert run_store.get_run(run.id).context == {"a": 2}
    assert [(v.sequence, v.status) for v in visit_store.visits_for_run(run.id)] == [(1, "failed"), (2, "completed")]


def test_concurrent_visits_of_one_run_on_postgres(pg):
    run_id = run_store.create_run(f"pg-{uuid.uuid4().hex[:8]}").id

    def write(tag: str) -> None:
        for i in range(10):
            visit_store.start_visit(run_id, f"{tag}{i}", "tool")

    with ThreadPoolExecutor(max_workers=4) as pool:
        for future in [pool.submit(write, f"t{t}") for t in range(4)]:
            future.result()
    assert [v.sequence for v in visit_store.visits_for_run(run_id)] == list(range(1, 41))


def test_an_items_end_waits_for_the_flushers_transaction_that_holds_its_start_row(pg):
    """On PostgreSQL the flusher's transaction runs beside the engine's. While it holds an item's
    start row uncommitted, the item's end and the parent's checkpoint that carries it wait for it,
    rather than update nothing and insert the row again (a duplicate key once it commits)."""
    import threading

    run = run_store.create_run(f"pg-{uuid.uuid4().hex[:8]}")
    run_store.set_run_status(run.id, "running")
    parent = visit_store.start_visit(run.id, "each", "foreach", sequence=1)
    db.flush_deferred()
    item = visit_store.start_visit(run.id, "each/node", "tool", parent_visit_id=parent.id, item_key="a", sequence=2)
    took, release, failed = threading.Event(), threading.Event(), []

    def flusher() -> None:  # the flusher's transaction: takes the item's start row, commits later
        try:
            with db.connection(write=True):
                took.set()
                release.wait(10)
        except Exception as exc:  # noqa: BLE001 - reported by the assertion below
            failed.append(exc)

    holder = threading.Thread(target=flusher)
    holder.start()
    assert took.wait(10)
    visit_store.close_visit(item.id, run.id, started_at=item.started_at, status="completed", output={"n": 1})
    threading.Timer(0.3, release.set).start()  # the checkpoint below waits until the flusher commits
    status = visit_store.close_visit(parent.id, run.id, started_at=parent.started_at, status="completed",
                                     output=[{"n": 1}], context={"n": 1})
    holder.join(10)
    assert failed == [] and status == "running"
    got = visit_store.get_visit(item.id)
    assert (got.status, got.output, got.item_key, got.ended_at is not None) == ("completed", {"n": 1}, "a", True)
    assert [v.id for v in visit_store.visits_for_run(run.id)] == [parent.id, item.id]
