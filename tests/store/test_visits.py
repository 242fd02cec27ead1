"""Node visits, LLM calls and tool calls, and the checkpoint that closes a visit."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from flows.store import runs as run_store
from flows.store import visits as visit_store
from flows.store._common import ms_between
from flows.store.errors import NotFound, StoreError


T0 = datetime(2025, 1, 1, tzinfo=UTC)


def test_visit_sequences_count_per_run(store, run):
    other = run_store.create_run("d")
    assert visit_store.next_visit_sequence(run.id) == 1
    seqs = [visit_store.start_visit(run.id, f"n{i}", "tool").sequence for i in range(3)]
    assert seqs == [1, 2, 3]
    assert visit_store.start_visit(other.id, "n", "tool").sequence == 1
    assert visit_store.next_visit_sequence(run.id) == 4


def test_start_and_finish_visit_round_trip(store, run):
    visit = visit_store.start_visit(run.id, "extract", "agent", input={"doc": "x"}, item_key="item-1", attempt=2,
                                    prefect_task_run_id="ptr", now=T0)
    diff = [{"op": "add", "path": "/terms", "old": None, "new": [1]}]
    done = visit_store.finish_visit(visit.id, output={"terms": [1]}, context_diff=diff, next_node="review",
                                    now=T0 + timedelta(milliseconds=1500))
    got = visit_store.get_visit(visit.id)
    assert (got.status, got.output, got.context_diff, got.next_node, got.duration_ms, got.ended_at) == (
        "completed", {"terms": [1]}, diff, "review", 1500, T0 + timedelta(milliseconds=1500))
    assert (got.input, got.item_key, got.attempt, got.prefect_task_run_id) == ({"doc": "x"}, "item-1", 2, "ptr")
    assert done.duration_ms == 1500
    failed = visit_store.finish_visit(visit_store.start_visit(run.id, "x", "tool").id, "failed", error="bad input")
    assert (failed.status, failed.error, failed.context_diff) == ("failed", "bad input", [])


def test_finish_visit_checks_status_and_id(store, run):
    visit = visit_store.start_visit(run.id, "n", "tool")
    with pytest.raises(StoreError, match="visit status"):
        visit_store.finish_visit(visit.id, "done")
    with pytest.raises(NotFound):
        visit_store.finish_visit("missing")


def test_visit_of_an_unknown_run_is_refused(store):
    with pytest.raises(NotFound, match="no-such-run"):
        visit_store.start_visit("no-such-run", "n", "tool")


def test_visits_for_run_in_order_and_last_completed(store, run):
    def visit(node, status="completed", item=None, parent=None):
        v = visit_store.start_visit(run.id, node, "tool", item_key=item, parent_visit_id=parent)
        return visit_store.finish_visit(v.id, status) if status != "running" else v

    a1 = visit("a")
    b1 = visit("b")
    a2 = visit("a")  # a loop back to a
    fe = visit("each", status="running")
    i1 = visit("body", item="1", parent=fe.id)
    visit("body", "failed", item="2", parent=fe.id)
    assert [v.sequence for v in visit_store.visits_for_run(run.id)] == [1, 2, 3, 4, 5, 6]
    assert [v.id for v in visit_store.last_completed_visits(run.id)] == [b1.id, a2.id, i1.id]
    assert a1.id not in {v.id for v in visit_store.last_completed_visits(run.id)}


def test_llm_calls_add_to_run_totals_and_tool_calls_are_kept(store, run):
    visit = visit_store.start_visit(run.id, "agent", "agent")
    visit_store.record_llm_call(run.id, "openai/gpt-4o-mini", visit_id=visit.id, messages=[{"role": "user", "content": "q"}],
                                response={"content": "a"}, tools=[{"name": "fetch"}], tokens_in=10, tokens_out=5,
                                cost_usd=0.002, latency_ms=120, cassette_key="k1")
    visit_store.record_llm_call(run.id, "openai/gpt-4o-mini", visit_id=visit.id, tokens_in=1, tokens_out=1, cost_usd=0.001,
                                attempt=2, repair=True, offline=True, error="schema mismatch")
    visit_store.record_tool_call(run.id, "fetch", visit_id=visit.id, args={"url": "x"}, result={"status": 200}, latency_ms=9)
    calls = visit_store.llm_calls_for_run(run.id, visit_id=visit.id)
    assert [(c.attempt, c.repair, c.cassette_key, c.offline) for c in calls] == [
        (1, False, "k1", False), (2, True, None, True)]
    assert calls[0].messages == [{"role": "user", "content": "q"}] and calls[0].tools == [{"name": "fetch"}]
    got = run_store.get_run(run.id)
    assert got.tokens == 17 and got.cost_usd == pytest.approx(0.003)
    tools = visit_store.tool_calls_for_run(run.id)
    assert [(t.tool, t.args, t.result, t.status) for t in tools] == [
        ("fetch", {"url": "x"}, {"status": 200}, "completed")]
    assert visit_store.llm_calls_for_run(run.id, visit_id="other") == []


def test_checkpoint_closes_the_visit_and_stores_the_context_together(store, run):
    visit = visit_store.start_visit(run.id, "extract", "agent", now=T0)
    diff = [{"op": "add", "path": "/terms", "old": None, "new": [1]}]
    done = visit_store.checkpoint_visit(visit.id, run.id, output={"terms": [1]}, context_diff=diff, next_node="review",
                                        context={"terms": [1]}, now=T0 + timedelta(seconds=2))
    assert (done.status, done.duration_ms, done.next_node) == ("completed", 2000, "review")
    got = run_store.get_run(run.id)
    assert (got.context, got.heartbeat_at) == ({"terms": [1]}, T0 + timedelta(seconds=2))
    other = run_store.create_run("d")
    with pytest.raises(StoreError, match="belongs to run"):
        visit_store.checkpoint_visit(visit.id, other.id, context={"x": 1})
    assert run_store.get_run(other.id).context == {}  # the refused checkpoint wrote nothing


def test_the_dashboard_reads_light_visits_node_pages_children_and_calls(store, run):
    parent = visit_store.start_visit(run.id, "each", "foreach")
    items = [visit_store.start_visit(run.id, "item", "tool", input={"big": "x" * 100}, item_key=k,
                                     parent_visit_id=parent.id) for k in ("a", "b", "c")]
    light = visit_store.visits_for_run(run.id, light=True)
    assert [v["id"] for v in light] == [v.id for v in visit_store.visits_for_run(run.id)]
    assert set(light[0]) == {c.key for c in visit_store.VISIT_COLUMNS} and "input" not in light[0]
    shown, total = visit_store.node_visits(run.id, "item", limit=2)
    assert total == 3 and [v.item_key for v in shown] == ["c", "b"]
    assert [v.item_key for v in visit_store.child_visits(run.id, parent.id)] == ["a", "b", "c"]
    visit_store.record_llm_call(run.id, "offline/echo", visit_id=items[0].id)
    visit_store.record_tool_call(run.id, "fetch", visit_id=items[1].id)
    visit_store.record_tool_call(run.id, "fetch", visit_id=items[2].id)
    llm, tools = visit_store.calls_for_visits(run.id, [items[0].id, items[1].id])
    assert list(llm) == [items[0].id] and list(tools) == [items[1].id]
    assert visit_store.calls_for_visits(run.id, []) == ({}, {})


def test_last_changing_node_reads_back_past_visits_that_changed_nothing(store, run):
    assert visit_store.last_changing_node(run.id) is None
    diff = [{"op": "replace", "path": "/n", "old": 0, "new": 1}]
    changed = visit_store.start_visit(run.id, "count", "tool")
    visit_store.finish_visit(changed.id, context_diff=diff)
    parent = visit_store.start_visit(run.id, "loop", "foreach")
    item = visit_store.start_visit(run.id, "loop", "tool", parent_visit_id=parent.id, item_key="a")
    visit_store.finish_visit(item.id, context_diff=diff)  # an item's change is its parent's
    visit_store.finish_visit(parent.id)
    for _ in range(5):
        visit_store.finish_visit(visit_store.start_visit(run.id, "idle", "condition").id)
    assert visit_store.last_changing_node(run.id, batch=2) == "count"


def test_the_engines_checkpoint_writes_the_whole_visit_and_the_context_in_one_go(store, run):
    """The engine's path (a sequence it allocated, the start row deferred): the close inserts the
    visit with its start and end and saves the run's context, and reads back as the ORM wrote it."""
    visit = visit_store.start_visit(run.id, "extract", "tool", input={"doc": "é"}, sequence=1, attempt=2, now=T0)
    diff = [{"op": "add", "path": "/terms", "old": None, "new": [1]}]
    status = visit_store.close_visit(visit.id, run.id, started_at=T0, status="completed", output={"terms": [1]},
                                     context_diff=diff, next_node="review", context={"terms": [1]})
    assert status == run_store.get_run(run.id).status == "pending"  # the run's status, as of the checkpoint
    got = visit_store.get_visit(visit.id)
    assert (got.sequence, got.attempt, got.input, got.output, got.context_diff, got.next_node, got.status) == (
        1, 2, {"doc": "é"}, {"terms": [1]}, diff, "review", "completed")
    assert got.started_at == T0 and got.ended_at.tzinfo is not None and got.ended_at > T0
    saved = run_store.get_run(run.id)
    assert saved.context == {"terms": [1]} and saved.heartbeat_at == got.ended_at


def test_a_checkpoint_for_an_unknown_run_raises_the_stores_integrity_error_and_writes_nothing(store, run):
    from sqlalchemy.exc import IntegrityError

    visit = visit_store.start_visit("no-such-run", "extract", "tool", sequence=1, now=T0)
    with pytest.raises(IntegrityError):
        visit_store.close_visit(visit.id, "no-such-run", started_at=T0, status="completed", context={"x": 1})
    assert visit_store.get_visit(visit.id) is None


def test_an_items_close_after_its_start_row_was_written_updates_it_whole(store, run):
    """A fan-out item: its start row went out with another transaction (here: a flush), so the
    close is an update; on SQLite it runs on the driver's cursor and must read back as Core wrote."""
    from flows.store import db

    parent = visit_store.start_visit(run.id, "each", "foreach", sequence=1, now=T0)
    item = visit_store.start_visit(run.id, "each/node", "interaction", parent_visit_id=parent.id, item_key="k-1",
                                   sequence=2, now=T0)
    db.flush_deferred()
    assert visit_store.get_visit(item.id).status == "running"
    status = visit_store.close_visit(item.id, run.id, started_at=T0, status="failed", output=None, error="no «label»",
                                     error_kind="model", input={"topic": "ü"})
    assert status is None  # an item's end waits for the next transaction: no status read
    got = visit_store.get_visit(item.id)  # a read of this process writes it first
    assert (got.status, got.error, got.error_kind, got.input, got.output, got.context_diff, got.item_key) == (
        "failed", "no «label»", "model", {"topic": "ü"}, None, [], "k-1")
    assert got.started_at == T0 and got.ended_at.tzinfo is not None and got.duration_ms == ms_between(T0, got.ended_at)


def test_a_model_calls_record_reads_back_as_written_and_adds_to_the_runs_totals(store, run):
    messages = [{"role": "user", "content": "Étiquette ✓"}]
    response = {"content": '{"label": "x"}', "tool_calls": [], "model": "m", "retries": 0}
    call = visit_store.record_llm_call(run.id, "openai/m", messages=messages, response=response,
                                       tools=[{"type": "function"}], tokens_in=3, tokens_out=4, cost_usd=0.25,
                                       latency_ms=51, attempt=2, repair=True, cassette_key="k", offline=False)
    visit_store.record_llm_call(run.id, "openai/m", error="timed out", cost_usd=0.5, tokens_in=1)
    first, second = visit_store.llm_calls_for_run(run.id)
    assert first.id == call.id
    assert (first.messages, first.response, first.tools, first.tokens_in, first.tokens_out, first.cost_usd) == (
        messages, response, [{"type": "function"}], 3, 4, 0.25)
    assert (first.latency_ms, first.attempt, first.repair, first.offline, first.cassette_key, first.error) == (
        51, 2, True, False, "k", None)
    assert first.created_at.tzinfo is not None and (second.error, second.response) == ("timed out", None)
    saved = run_store.get_run(run.id)
    assert (saved.cost_usd, saved.tokens) == (0.75, 8)


def test_a_model_call_for_an_unknown_run_raises_the_stores_integrity_error_and_writes_nothing(store, run):
    from sqlalchemy.exc import IntegrityError

    with pytest.raises(IntegrityError):
        visit_store.record_llm_call("no-such-run", "m", cost_usd=1.0)
    assert visit_store.llm_calls_for_run("no-such-run") == []


def test_a_driver_insert_must_name_every_column_whose_default_is_pythons(store):
    """The driver does not apply Python-side defaults as a Core insert does: leaving one out
    would write NULL, so building such a statement is refused."""
    from sqlmodel import SQLModel

    from flows.store import db, driver

    table = SQLModel.metadata.tables["llm_calls"]
    with pytest.raises(ValueError, match="id, .*created_at"):
        driver.insert(table, ("run_id", "model"), db.get_engine().dialect)


def _raw_status(visit_id: str) -> str | None:
    """The visit's status as another process sees it: a connection of its own, no flush."""
    import sqlite3

    from flows.store import db

    with sqlite3.connect(db.get_engine().url.database) as other:
        found = other.execute("SELECT status FROM node_visits WHERE id = ?", (visit_id,)).fetchone()
    return found[0] if found else None


def _item(run, parent, key, sequence):
    return visit_store.start_visit(run.id, "each/node", "tool", parent_visit_id=parent.id, item_key=key,
                                   sequence=sequence, now=T0)


def test_an_items_end_waits_for_the_parents_close_which_writes_it_first(store, run):
    """A fan-out item's close is not a transaction: its end goes with the next one, here its
    parent's checkpoint (the fan-out's durability point), in the same transaction."""
    parent = visit_store.start_visit(run.id, "each", "foreach", sequence=1, now=T0)
    first, second = _item(run, parent, "a", 2), _item(run, parent, "b", 3)
    from flows.store import db

    db.flush_deferred()  # the first item's start is in the database; the second's end will merge into its start
    assert visit_store.close_visit(first.id, run.id, started_at=T0, status="completed", output={"n": 1}) is None
    third = _item(run, parent, "c", 4)
    assert visit_store.close_visit(third.id, run.id, started_at=T0, status="completed", output={"n": 3}) is None
    assert (_raw_status(first.id), _raw_status(third.id)) == ("running", None)  # nothing written yet
    visit_store.close_visit(parent.id, run.id, started_at=T0, status="completed", output=[1, 3], context={"n": 2})
    assert (_raw_status(first.id), _raw_status(third.id), _raw_status(parent.id)) == ("completed", "completed",
                                                                                      "completed")
    assert _raw_status(second.id) == "running"  # still running: only its start was written
    assert [visit_store.get_visit(v.id).output for v in (first, third)] == [{"n": 1}, {"n": 3}]


def test_an_items_end_carried_by_a_transaction_that_rolled_back_is_written_by_the_next(store, run):
    from flows.store import db

    parent = visit_store.start_visit(run.id, "each", "foreach", sequence=1, now=T0)
    item = _item(run, parent, "a", 2)
    db.flush_deferred()
    visit_store.close_visit(item.id, run.id, started_at=T0, status="completed", output={"n": 1})
    with pytest.raises(RuntimeError), db.session(write=True):
        raise RuntimeError("a refused write of the same process")  # it carried the item's end, then rolled back
    assert _raw_status(item.id) == "running"
    db.flush_deferred()
    assert _raw_status(item.id) == "completed" and visit_store.get_visit(item.id).output == {"n": 1}


def test_an_items_end_alone_is_written_by_the_flusher_soon_after(store, run):
    """No transaction follows (a long fan-out's other items still run): the flusher thread writes
    it, so the dashboard's process sees the item end within about FLUSH_AFTER."""
    import time

    parent = visit_store.start_visit(run.id, "each", "foreach", sequence=1, now=T0)
    item = _item(run, parent, "a", 2)
    visit_store.close_visit(item.id, run.id, started_at=T0, status="completed", output={"n": 1})
    deadline = time.monotonic() + 10 * visit_store.FLUSH_AFTER
    while _raw_status(item.id) != "completed" and time.monotonic() < deadline:
        time.sleep(visit_store.FLUSH_AFTER / 4)
    assert _raw_status(item.id) == "completed"


def test_a_transaction_whose_rollback_fails_still_lets_go_of_the_deferred_rows(store, run, monkeypatch):
    """The transaction that carries deferred rows holds the visits' write turn until it ends; a
    rollback that fails too must not keep it, or every later visit write of the process would hang."""
    import threading

    from sqlmodel import Session

    from flows.store import db

    visit = visit_store.start_visit(run.id, "n", "tool", sequence=1, now=T0)  # a deferred row to carry

    def broken_rollback(self):
        raise OSError("the connection went away")

    with monkeypatch.context() as patched, pytest.raises(OSError):
        patched.setattr(Session, "rollback", broken_rollback)
        with db.session(write=True):
            raise RuntimeError("a refused write of the same process")
    free: list[bool] = []

    def another_thread_writes() -> None:
        free.append(visit_store._in_flight.acquire(timeout=2))
        if free[-1]:
            visit_store._in_flight.release()

    other = threading.Thread(target=another_thread_writes)
    other.start()
    other.join()
    assert free == [True]
    db.flush_deferred()  # the row was handed back: the next transaction writes it (and none is left for a later test)
    assert visit_store.get_visit(visit.id).status == "running"
