"""Runs: creation, status transitions, usage, listing, lookups, on a real SQLite file."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import sqlalchemy as sa

from flows.store import db
from flows.store import definitions as definition_store
from flows.store import runs as run_store
from flows.store import visits as visit_store
from flows.store.errors import InvalidTransition, NotFound, StoreError
from flows.store.models import Run, new_id


T0 = datetime(2025, 1, 1, tzinfo=UTC)


def test_create_and_get_round_trip(store):
    run = run_store.create_run("contract_review", content={"process": "x"}, inputs={"doc": "a"},
                               context={"doc": "a", "n": 0}, started_by="ann", trigger="api")
    got = run_store.get_run(run.id)
    assert (got.definition_name, got.status, got.inputs, got.context, got.trigger, got.started_by) == (
        "contract_review", "pending", {"doc": "a"}, {"doc": "a", "n": 0}, "api", "ann")
    assert got.created_at.tzinfo is not None and got.created_at.utcoffset() == timedelta(0)
    assert definition_store.get_snapshot(got.content_hash) == {"process": "x"}
    assert run_store.get_run("nope") is None


def test_run_ids_can_be_chosen_by_the_caller(store):
    assert run_store.create_run("d", run_id="fixed-id").id == "fixed-id"


def test_unknown_trigger_is_refused(store):
    with pytest.raises(StoreError, match="trigger"):
        run_store.create_run("d", trigger="telepathy")


def test_status_lifecycle_stamps_times_pid_and_outcome(store):
    run = run_store.create_run("d")
    now = T0 + timedelta(seconds=5)
    running = run_store.set_run_status(run.id, "running", now=now)
    assert (running.started_at, running.heartbeat_at, running.ended_at) == (now, now, None)
    assert running.pid and running.host
    done = run_store.set_run_status(run.id, "completed", outcome="approved", now=now + timedelta(seconds=3))
    assert (done.status, done.outcome, done.ended_at) == ("completed", "approved", now + timedelta(seconds=3))
    assert run_store.get_run(run.id).outcome == "approved"


def test_impossible_transitions_are_refused(store):
    run = run_store.create_run("d")
    run_store.set_run_status(run.id, "running")
    run_store.set_run_status(run.id, "completed")
    with pytest.raises(InvalidTransition, match="from completed to running"):
        run_store.set_run_status(run.id, "running")
    with pytest.raises(StoreError, match="run status"):
        run_store.set_run_status(run.id, "exploded")
    with pytest.raises(NotFound):
        run_store.set_run_status("missing", "running")
    run_store.set_run_status(run.id, "completed")  # same status again: a retried report, fine


def test_resuming_a_failed_run_clears_the_failure(store):
    run = run_store.create_run("d")
    run_store.set_run_status(run.id, "running", now=T0)
    failed = run_store.set_run_status(run.id, "failed", error="boom", now=T0 + timedelta(seconds=1))
    assert (failed.error, failed.ended_at) == ("boom", T0 + timedelta(seconds=1))
    resumed = run_store.set_run_status(run.id, "running", now=T0 + timedelta(seconds=9))
    assert (resumed.status, resumed.error, resumed.ended_at, resumed.started_at) == ("running", None, None, T0)


def test_a_run_ends_with_its_final_context_in_the_same_transaction(store):
    run = run_store.create_run("d", context={"a": 1})
    run_store.set_run_status(run.id, "running")
    with pytest.raises(InvalidTransition):
        run_store.set_run_status(run.id, "pending", context={"a": 9})  # refused: the context stays too
    assert run_store.get_run(run.id).context == {"a": 1}
    run_store.set_run_status(run.id, "completed", outcome="ok", context={"a": 2})
    assert (run_store.get_run(run.id).status, run_store.get_run(run.id).context) == ("completed", {"a": 2})


def test_a_flow_body_takes_up_its_run_with_the_visits_so_far(store):
    run = run_store.create_run("d")
    for n, node in enumerate(["a", "b"], start=1):
        visit_store.start_visit(run.id, node, "tool", sequence=n)
    taken, past = run_store.take_up_run(run.id, "pf-1", pid=4242, host="there", now=T0)
    assert (taken.id, taken.status, taken.pid, taken.host, taken.started_at) == (run.id, "running", 4242, "there", T0)
    assert [v.node_id for v in past] == ["a", "b"]
    stored = run_store.get_run(run.id)
    assert (stored.status, stored.prefect_flow_run_id, stored.pid) == ("running", "pf-1", 4242)
    # Prefect ran the same flow run again (a retry, another process): found by the flow run's id
    again, _ = run_store.take_up_run("not-recorded", "pf-1", pid=77, host="elsewhere")
    assert (again.id, again.pid, again.started_at) == (run.id, 77, T0)
    assert run_store.take_up_run("not-recorded", "pf-unknown", pid=1, host="h") is None
    assert run_store.take_up_run(None, None, pid=1, host="h") is None


def test_a_run_that_ended_is_not_taken_up_again(store):
    run = run_store.create_run("d")
    run_store.set_run_status(run.id, "running")
    run_store.set_run_status(run.id, "completed")
    with pytest.raises(InvalidTransition, match="from completed to running"):
        run_store.take_up_run(run.id, "pf-2", pid=1, host="h")
    assert run_store.get_run(run.id).prefect_flow_run_id is None, "nothing of the refused take-up is kept"


def test_context_usage_and_updates(store):
    run = run_store.create_run("d", context={"a": 1})
    run_store.update_run_context(run.id, {"a": 2, "b": [1]}, now=T0)
    run_store.add_run_usage(run.id, cost_usd=0.25, tokens=100)
    run_store.add_run_usage(run.id, cost_usd=0.5, tokens=1)
    run_store.update_run(run.id, prefect_flow_run_id="pf-1")
    got = run_store.get_run(run.id)
    assert (got.context, got.heartbeat_at, got.cost_usd, got.tokens, got.prefect_flow_run_id) == (
        {"a": 2, "b": [1]}, T0, 0.75, 101, "pf-1")
    with pytest.raises(StoreError, match="status"):
        run_store.update_run(run.id, status="completed")
    with pytest.raises(NotFound):
        run_store.update_run_context("missing", {})


def _bulk_runs(url: str, rows: list[dict]) -> None:
    """Insert many runs in one statement (the repo adds one row per transaction, by design)."""
    base = {"definition_version": None, "content_hash": None, "outcome": None, "inputs": {}, "context": {},
            "parent_run_id": None, "parent_visit_id": None, "trigger": "manual", "started_by": None,
            "prefect_flow_run_id": None, "started_at": None, "ended_at": None, "error": None, "cost_usd": 0.0,
            "tokens": 0, "heartbeat_at": None, "pid": None, "host": None}
    with db.get_engine(url).begin() as conn:
        conn.execute(sa.insert(Run.__table__), [{**base, "id": new_id(), **row} for row in rows])


@pytest.fixture
def twelve_runs(store):
    statuses = ["completed", "failed", "running"]
    rows = [{"definition_name": f"def{i % 2}", "status": statuses[i % 3], "started_by": "bob" if i == 7 else None,
             "created_at": T0 + timedelta(minutes=i)} for i in range(12)]
    _bulk_runs(store, rows)
    return rows


def _minutes(runs) -> list[int]:
    return [int((r.created_at - T0).total_seconds() // 60) for r in runs]


def test_list_runs_newest_first_with_total(twelve_runs):
    rows, total = run_store.list_runs(limit=5)
    assert total == 12 and _minutes(rows) == [11, 10, 9, 8, 7]
    rows, total = run_store.list_runs(limit=5, offset=10)
    assert total == 12 and _minutes(rows) == [1, 0]


def test_list_runs_filters(twelve_runs):
    rows, total = run_store.list_runs(status="failed")
    assert total == 4 and _minutes(rows) == [10, 7, 4, 1]
    rows, total = run_store.list_runs(status=["failed", "running"], definition="def0")
    assert _minutes(rows) == [10, 8, 4, 2] and total == 4
    rows, _ = run_store.list_runs(text="BO")
    assert _minutes(rows) == [7]
    rows, _ = run_store.list_runs(text="def1", since=T0 + timedelta(minutes=5), until=T0 + timedelta(minutes=9))
    assert _minutes(rows) == [7, 5]
    assert run_store.list_runs(text="%") == ([], 0)  # LIKE wildcards are matched literally
    assert run_store.definition_names_with_runs() == ["def0", "def1"]



def test_light_rows_answer_the_same_question_with_the_dashboard_columns(twelve_runs):
    whole, total = run_store.list_runs(status=["failed", "running"], definition="def0", limit=3, offset=1)
    light, light_total = run_store.list_runs(status=["failed", "running"], definition="def0", limit=3, offset=1,
                                             light=True)
    assert light_total == total == 4 and [r["id"] for r in light] == [r.id for r in whole]
    assert set(light[0]) == {c.key for c in run_store.RUN_COLUMNS} and "context" not in light[0]
    summaries = run_store.run_summaries([whole[0].id, whole[0].id, whole[1].id])
    assert set(summaries) == {whole[0].id, whole[1].id}
    assert summaries[whole[0].id] == light[0]
    assert run_store.run_summaries([]) == {}

def _generate_runs(url: str, count: int) -> None:
    """Insert ``count`` runs inside SQLite (a Python-side insert of 100k rows takes ~10 s).

    Run ``i`` has definition ``def<i % 20>``, status ``statuses[i % 4]`` and was created ``i``
    seconds after T0, written in SQLAlchemy's SQLite datetime format.
    """
    sql = f"""
        WITH RECURSIVE seq(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM seq WHERE i + 1 < {count})
        INSERT INTO runs (id, definition_name, status, inputs, context, trigger, created_at, cost_usd, tokens)
        SELECT lower(hex(randomblob(16))), 'def' || (i % 20),
               CASE i % 4 WHEN 0 THEN 'completed' WHEN 1 THEN 'failed' WHEN 2 THEN 'running' ELSE 'paused' END,
               '{{}}', '{{}}', 'manual', datetime('2025-01-01', '+' || i || ' seconds') || '.000000', 0, 0
        FROM seq"""
    with db.get_engine(url).begin() as conn:
        conn.exec_driver_sql(sql)


def test_list_runs_pages_correctly_and_uses_the_indexes_at_100k_runs(store):
    # Speed is measured in benchmarks/, not asserted here: this checks the results and the
    # query plan (an index gives the order, so no sort of 100k rows happens).
    _generate_runs(store, 100_000)
    cases = [({}, 99_999), ({"status": "failed"}, 99_997), ({"definition": "def3"}, 99_983),
             ({"status": "paused", "offset": 5000}, 99_999 - 4 * 5000)]
    for kwargs, newest in cases:
        rows, total = run_store.list_runs(**kwargs)
        assert len(rows) == 50 and total >= 5000
        assert rows[0].created_at == T0 + timedelta(seconds=newest)
        assert rows == sorted(rows, key=lambda r: r.created_at, reverse=True)
    assert run_store.list_runs(status="failed")[1] == 25_000
    with db.get_engine(store).connect() as conn:
        plan = " | ".join(str(r[-1]) for r in conn.exec_driver_sql(
            "EXPLAIN QUERY PLAN SELECT id FROM runs WHERE status = 'failed' "
            "ORDER BY created_at DESC, id DESC LIMIT 50"))
    # The index gives the order; only ties on created_at are sorted ("RIGHT PART OF ORDER BY").
    assert "USING INDEX ix_runs_status_created_at" in plan
    assert "TEMP B-TREE FOR ORDER BY" not in plan


def test_child_runs(store):
    parent = run_store.create_run("p")
    kids = [run_store.create_run("c", parent_run_id=parent.id, trigger="subprocess") for _ in range(2)]
    assert [r.id for r in run_store.child_runs(parent.id)] == [k.id for k in kids]


def test_lookups_by_prefect_id_and_status(store):
    run = run_store.create_run("d", prefect_flow_run_id="pf-42")
    assert run_store.get_run_by_prefect_id("pf-42").id == run.id
    assert run_store.get_run_by_prefect_id("pf-0") is None
    assert run_store.run_status(run.id) == "pending" and run_store.run_status("missing") is None
