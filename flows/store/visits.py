"""Node visits and the calls made during them (LLM calls, tool calls).

The engine writes a visit per node it runs, so :func:`begin_visit` (the engine's
:func:`start_visit`), :func:`close_visit` and :func:`record_llm_call` are on the path of every node
visit or model call: they run in :func:`flows.store.db.hot_transaction`, not ORM sessions — on
SQLite on the process's writer connection, straight on the driver's cursor
(:mod:`flows.store.driver`), elsewhere as Core statements built once. :func:`checkpoint_visit` /
:func:`close_visit` close a visit and store the run's new context in ONE transaction — the
durability point resume relies on.

**A visit is one statement when it can be.** :func:`begin_visit` (and :func:`start_visit` given
a ``sequence``) does not write: the row waits (:data:`_pending`) and goes to the database with the
first transaction this process opens — the visit's own :func:`close_visit`, which then inserts
it whole, with its end, in the checkpoint transaction; or any other (a model call's record, an
artifact, a human task, a read: :func:`flows.store.db.defer_writes` writes it first, so no row
that references the visit precedes it and no query of this process misses it); or, for a visit
still running after :data:`FLUSH_AFTER` seconds, a flusher thread's, so that other processes (the
dashboard) see long visits running. A no-op node is one transaction instead of two. Should the
transaction that carried a pending row roll back, the row is pending again.

**A fan-out item's close waits too.** An item (a visit with a parent visit, closed without a
context of its own) is not a durability point: its parent's close is, which stores the joined
result with the run's context in one transaction that first writes every item row still
waiting. So :func:`close_visit` of an item only queues its end (merged into its start row when
that still waits) for the next transaction, or the flusher's after :data:`FLUSH_AFTER`. The
price is resume's: after a crash, items that ended less than :data:`FLUSH_AFTER` before it run
again, as the items still running at the crash always did (a model call's record is its own
transaction, so a resumed item's model answers are reused all the same). What it buys: a
commit per item gave the CPU to Prefect's event and log threads at every item, measured on the
foreach benchmark as 0.3 ms an item (1,000 no-op items, window 50: 3.59 s against 3.30 s with
no item writes at all).

**One transaction carries deferred rows at a time.** On SQLite the process's write transactions
take turns under one lock anyway. On PostgreSQL they run side by side, and a row the flusher's
transaction took is invisible to the others until it commits: an item's end taken by the
engine's next transaction would update nothing and then insert the row again, colliding with
the flusher's. So the transaction that takes deferred rows holds :data:`_in_flight` until it
ends, and every other write of a visit row waits for it first (:func:`_settled`).

The readers return whole rows for the engine and the CLI; the dashboard's questions (a run's
visits without their 64 KB input/output/diff, one node's visits, a page's calls) are here too,
answered by the same queries (``visits_for_run(light=True)`` gives :data:`VISIT_COLUMNS` dicts).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any, Literal, TypeVar, overload

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError
from sqlmodel import SQLModel, col, func, insert, select, update
from sqlmodel.sql.expression import SelectOfScalar

from flows.store import driver
from flows.store._common import add_row, check, get_row, lock_run, mappings, ms_between, page, require_row
from flows.store.db import connection, defer_writes, flush_deferred, hot_transaction, session
from flows.store.errors import NotFound, StoreError
from flows.store.models import (
    VISIT_STATUSES,
    LlmCall,
    NodeVisit,
    Run,
    RunStatus,
    ToolCall,
    VisitStatus,
    new_id,
    utcnow,
)

#: Core tables for the per-visit hot path (see :func:`flows.store.db.connection`).
_VISITS: sa.Table = SQLModel.metadata.tables[NodeVisit.__tablename__]
_RUNS: sa.Table = SQLModel.metadata.tables[Run.__tablename__]
_LLM_CALLS: sa.Table = SQLModel.metadata.tables[LlmCall.__tablename__]

#: The columns of the dashboard's visit rows: never input, output or context diff.
VISIT_COLUMNS = (
    NodeVisit.id, NodeVisit.sequence, NodeVisit.node_id, NodeVisit.node_type, NodeVisit.item_key,
    NodeVisit.parent_visit_id, NodeVisit.attempt, NodeVisit.status, NodeVisit.started_at, NodeVisit.ended_at,
    NodeVisit.duration_ms, NodeVisit.next_node, NodeVisit.error, NodeVisit.error_kind,
)

_Call = TypeVar("_Call", LlmCall, ToolCall)

#: The checkpoint's statements, built once: building a statement per call (and its cache key)
#: was a third of the close's CPU
_INSERT_VISIT = insert(_VISITS)
_SAVE_CONTEXT = (update(_RUNS).where(_RUNS.c.id == sa.bindparam("run_id"))
                 .values(context=sa.bindparam("context"), heartbeat_at=sa.bindparam("now")).returning(_RUNS.c.status))
_RUN_STATUS = select(_RUNS.c.status).where(_RUNS.c.id == sa.bindparam("run_id"))
_INSERT_LLM_CALL = insert(_LLM_CALLS)
#: every column of a visit row, in the table's order (a start row plus its close covers them all)
_VISIT_NAMES = tuple(c.name for c in _VISITS.c)
_ADD_SPEND = (update(_RUNS).where(_RUNS.c.id == sa.bindparam("run_id"))
              .values(cost_usd=_RUNS.c.cost_usd + sa.bindparam("cost", type_=sa.Float),
                      tokens=_RUNS.c.tokens + sa.bindparam("tokens", type_=sa.Integer)))

#: seconds a started visit may stay unwritten (see the module docstring)
FLUSH_AFTER = 0.2
#: visit id → (its row, when it was deferred): started by the engine (and maybe ended, a fan-out
#: item), not yet written
_pending: dict[str, tuple[dict[str, Any], float]] = {}
#: visit id → (its start row, its end's values, when it ended): fan-out items that ended after
#: their start row was written
_ending: dict[str, tuple[dict[str, Any], dict[str, Any], float]] = {}
#: visit id → its start row, for every visit started here and not closed (pending or written)
_open: dict[str, dict[str, Any]] = {}
_pending_lock = threading.Lock()
#: held by the thread whose transaction carries deferred rows, from taking them until that
#: transaction ends; whoever writes a visit row that may be among them takes it first (see
#: :func:`_settled`). Re-entrant: a close's own transaction may be the one carrying.
_in_flight = threading.RLock()
_flusher: threading.Thread | None = None
#: per thread, one entry per transaction open in it that took deferred rows: what it took from
#: :data:`_pending` and :data:`_ending` (``None`` until written), handed back should it roll back
_carried = threading.local()


def _has_pending() -> bool:
    return bool(_pending or _ending)


def _settled() -> threading.RLock:
    """Wait until no other transaction of this process is writing deferred rows, and keep it so.

    On SQLite the process's write transactions take turns anyway. On PostgreSQL they run side by
    side: a visit's start row taken by the flusher's transaction is invisible to another until
    that one commits, so an update of it would find nothing and an insert would collide with it."""
    return _in_flight


def _write_pending(conn: driver.DriverConnection) -> None:
    _in_flight.acquire()  # released by _pending_ended, when this transaction has ended
    stack = getattr(_carried, "stack", None)
    if stack is None:
        stack = _carried.stack = []
    stack.append(None)
    with _pending_lock:
        rows, ends = dict(_pending), dict(_ending)
        _pending.clear()
        _ending.clear()
    if rows and _on_driver(conn):  # a HotTransaction takes driver statements only
        driver.insert(_VISITS, _VISIT_NAMES, conn.dialect).run_many(conn, [row for row, _ in rows.values()])
    elif rows:
        by_columns: dict[tuple[str, ...], list[dict[str, Any]]] = {}  # one multi-row insert per shape
        for row, _ in rows.values():
            by_columns.setdefault(tuple(row), []).append(row)
        for same in by_columns.values():
            _core(conn).execute(_INSERT_VISIT, same)
    for visit_id, (started, values, _) in ends.items():
        if not _update_visit(conn, visit_id, values):  # the transaction that carried its start rolled back
            _insert_visit(conn, {**started, **values})
    # written: should the transaction roll back for its own reasons, they are deferred again (rows
    # that fail to write themselves are dropped, as they were before: they would fail every time)
    stack[-1] = (rows, ends)


def _pending_ended(committed: bool) -> None:
    try:
        carried = _carried.stack.pop()
        if carried is None or committed:
            return
        rows, ends = carried
        with _pending_lock:  # deferred again; anything queued since for the same visit is newer
            for visit_id, entry in rows.items():
                # a start row whose visit has closed since: the close inserted the whole visit
                if visit_id in _open or entry[0].get("ended_at") is not None:
                    _pending.setdefault(visit_id, entry)
            for visit_id, end in ends.items():
                _ending.setdefault(visit_id, end)
    finally:
        _in_flight.release()


defer_writes(_has_pending, _write_pending, _pending_ended)


def _flush_old() -> None:
    """The flusher thread: write the pending rows once one has waited :data:`FLUSH_AFTER`."""
    while True:
        time.sleep(FLUSH_AFTER / 2)
        with _pending_lock:
            oldest = min([at for _, at in _pending.values()] + [at for _, _, at in _ending.values()], default=None)
        if oldest is not None and time.monotonic() - oldest >= FLUSH_AFTER:
            try:
                flush_deferred()
            except Exception:  # noqa: BLE001 - the next transaction writes them instead
                pass


def _defer(row: dict[str, Any]) -> None:
    global _flusher
    with _pending_lock:
        _pending[row["id"]] = (row, time.monotonic())
        _open[row["id"]] = row
        if _flusher is None:
            _flusher = threading.Thread(target=_flush_old, name="ergon-visit-flusher", daemon=True)
            _flusher.start()


# --- writing visits ----------------------------------------------------------------------------


def next_visit_sequence(run_id: str) -> int:
    """The sequence number the next visit of ``run_id`` gets (1 for the first)."""
    with session() as s:
        return _next_sequence(s, run_id)


def _next_sequence(s, run_id: str) -> int:
    current = s.exec(select(func.max(NodeVisit.sequence)).where(NodeVisit.run_id == run_id)).one()
    return (current or 0) + 1


def mark_visit_suspended(visit_id: str) -> None:
    """A running visit whose run suspends now (its process ends on purpose): ``paused`` before the
    process goes, so that crash detection never takes the suspension for a death."""
    with connection(write=True) as conn, _settled():
        conn.execute(update(_VISITS).where(_VISITS.c.id == visit_id, _VISITS.c.status == "running")
                     .values(status="paused"))


def reopen_visit(visit_id: str) -> datetime:
    """Take up again a visit an earlier execution of the run left unfinished (a fan-out's parent
    visit, resumed with its completed items): ``running`` again, its end and error cleared.
    Returns the start the engine times it from: now, less the time it already ran (the time the
    run lay stopped is not the visit's)."""
    now = utcnow()
    with connection(write=True) as conn, _settled():
        ran = conn.execute(select(_VISITS.c.duration_ms).where(_VISITS.c.id == visit_id)).scalar()
        conn.execute(update(_VISITS).where(_VISITS.c.id == visit_id)
                     .values(status="running", ended_at=None, error=None, error_kind=None))
    return now - timedelta(milliseconds=ran or 0)


def set_next_node(visit_id: str, next_node: str | None) -> None:
    """Point a closed visit at another next node (a supervisor's or an operator's transition):
    a resumed run continues there."""
    with session(write=True) as s, _settled():
        visit = require_row(s, NodeVisit, visit_id)
        visit.next_node = next_node
        s.add(visit)


def start_visit(
    run_id: str,
    node_id: str,
    node_type: str,
    *,
    input: Any = None,
    item_key: str | None = None,
    parent_visit_id: str | None = None,
    attempt: int = 1,
    prefect_task_run_id: str | None = None,
    now: datetime | None = None,
    sequence: int | None = None,
) -> NodeVisit:
    """Record that a node visit started (status ``running``) with the next sequence number.

    Safe from concurrent branches of one run: the sequence is taken under a lock on the run.
    The engine, the only writer of a run's visits, passes the ``sequence`` it allocated itself,
    which skips the lock and the MAX query (this is on the path of every node visit).
    Raises :class:`NotFound` for an unknown run.
    """
    row = _visit_row(run_id, node_id, node_type, input=input, item_key=item_key, parent_visit_id=parent_visit_id,
                     attempt=attempt, prefect_task_run_id=prefect_task_run_id, started_at=now or utcnow(),
                     sequence=sequence)
    if sequence is not None:
        _defer(row)
    else:
        try:
            with session(write=True) as s:
                lock_run(s, run_id)
                row["sequence"] = _next_sequence(s, run_id)
                s.exec(insert(_VISITS).values(**row))
        except IntegrityError as exc:
            if "foreign key" in str(exc.orig).lower() and get_row(Run, run_id) is None:
                raise NotFound(f"no run {run_id!r}") from exc
            raise
    return NodeVisit.model_construct(**row)


def begin_visit(run_id: str, node_id: str, node_type: str, *, sequence: int, input: Any = None,
                item_key: str | None = None, parent_visit_id: str | None = None, attempt: int = 1,
                prefect_task_run_id: str | None = None) -> tuple[str, datetime]:
    """The engine's hot path of :func:`start_visit` (it allocated the ``sequence``): the visit's
    id and start time. Nothing is written yet — the row goes with this process's next
    transaction (see the module docstring), where an unknown run is found — and no
    :class:`NodeVisit` is built: the engine only needs these two (building the record was
    ~0.03 ms, a fifth of a no-op visit's own CPU)."""
    row = _visit_row(run_id, node_id, node_type, input=input, item_key=item_key, parent_visit_id=parent_visit_id,
                     attempt=attempt, prefect_task_run_id=prefect_task_run_id, started_at=utcnow(), sequence=sequence)
    _defer(row)
    return row["id"], row["started_at"]


def _visit_row(run_id: str, node_id: str, node_type: str, *, input: Any, item_key: str | None,
               parent_visit_id: str | None, attempt: int, prefect_task_run_id: str | None, started_at: datetime,
               sequence: int | None) -> dict[str, Any]:
    return dict(id=new_id(), run_id=run_id, sequence=sequence, node_id=node_id, node_type=node_type,
                item_key=item_key, parent_visit_id=parent_visit_id, attempt=attempt, status="running",
                input=input, prefect_task_run_id=prefect_task_run_id, started_at=started_at)


def close_visit(
    visit_id: str,
    run_id: str,
    *,
    started_at: datetime,
    status: VisitStatus,
    output: Any = None,
    context_diff: list[dict] | None = None,
    error: str | None = None,
    error_kind: str | None = None,
    next_node: str | None = None,
    context: dict | None = None,
    input: Any = None,
    submission: tuple[str, dict[str, list[dict[str, Any]]]] | None = None,
) -> RunStatus | None:
    """The engine's hot path: close a visit and (when ``context`` is given) store the run's new
    context in ONE transaction; returns the run's status as of that transaction, which is how
    the engine sees a cancel request before its next node without another query. A fan-out
    item's close writes nothing yet and returns ``None`` (see the module docstring).

    ``input``, when given, is what the node's body received (a tool's rendered arguments): the
    engine knows it only once the body has rendered it, after the visit started. ``submission``
    (a template step's output: its id and rows from :func:`flows.store.submissions.submission_rows`)
    is inserted in the same transaction and named on the visit."""
    check(status, VISIT_STATUSES, "visit status")
    now = utcnow()
    values: dict[str, Any] = dict(status=status, output=output, error=error, error_kind=error_kind, next_node=next_node,
                                  context_diff=context_diff or [], ended_at=now,
                                  duration_ms=max(0, ms_between(started_at, now)))
    if input is not None:
        values["input"] = input
    if submission is not None:
        values["output_submission_id"] = submission[0]
    with _pending_lock:
        pending = _pending.get(visit_id)
        started = _open.pop(visit_id, None)
        if pending is not None:
            # never written: the whole visit, one statement, goes with the deferred rows that start
            # the next transaction, in start order (a fan-out's parent before its items)
            _pending[visit_id] = ({**pending[0], **values}, pending[1])
        if context is None and submission is None and started is not None and started["parent_visit_id"]:
            # a fan-out item: its end waits for the next transaction (see the module docstring)
            if pending is None:
                _ending[visit_id] = (started, values, time.monotonic())
            return None
    # a template step's submission rows are Core inserts: they need a Core connection
    with connection(write=True) if submission is not None else hot_transaction() as conn, _settled():
        if pending is None and not _update_visit(conn, visit_id, values) and started is not None:
            _insert_visit(conn, {**started, **values})  # the transaction that carried its start row rolled back
        if submission is not None:
            from flows.store.submissions import insert_rows

            insert_rows(_core(conn), submission[1])
        return _save_context(conn, run_id, context, now) if context is not None else _run_status(conn, run_id)


# The checkpoint's statements: on SQLite on the driver's cursor (:mod:`flows.store.driver`), else
# Core statements built once (building each statement and its cache key per call was about a
# third of a visit's store CPU).

def _on_driver(conn: driver.DriverConnection) -> bool:
    return conn.dialect.name == "sqlite"


def _core(conn: driver.DriverConnection) -> sa.Connection:
    """The Core connection of a store off SQLite (only SQLite's hot path has HotTransactions)."""
    assert isinstance(conn, sa.Connection), "a Core statement in a driver-only transaction"
    return conn


def _insert_visit(conn: driver.DriverConnection, row: dict[str, Any]) -> None:
    if _on_driver(conn):
        driver.insert(_VISITS, _VISIT_NAMES, conn.dialect).run(conn, row)
    else:
        _core(conn).execute(_INSERT_VISIT, row)


def _update_visit(conn: driver.DriverConnection, visit_id: str, values: dict[str, Any]) -> bool:
    """Whether the visit's row was there to update."""
    if _on_driver(conn):
        return driver.update_by_id(_VISITS, tuple(values), conn.dialect).run(conn, {**values, "id": visit_id}) == 1
    return _core(conn).execute(update(_VISITS).where(_VISITS.c.id == visit_id).values(**values)).rowcount == 1


def _save_context(conn: driver.DriverConnection, run_id: str, context: dict, now: datetime) -> RunStatus | None:
    """Store the run's context (and beat its heart); the run's status as of this transaction."""
    values = {"run_id": run_id, "context": context, "now": now}
    if not _on_driver(conn):
        return _core(conn).execute(_SAVE_CONTEXT, values).scalar()
    found = driver.sql("save_context", f"UPDATE {_RUNS.name} SET context = ?, heartbeat_at = ? WHERE id = ? RETURNING status",
                       [("context", _RUNS.c.context), ("now", _RUNS.c.heartbeat_at), ("run_id", _RUNS.c.id)],
                       conn.dialect).run(conn, values)
    return found[0] if found else None  # type: ignore[index]


def _run_status(conn: driver.DriverConnection, run_id: str) -> RunStatus | None:
    if not _on_driver(conn):
        return _core(conn).execute(_RUN_STATUS, {"run_id": run_id}).scalar()
    found = driver.sql("run_status", f"SELECT status FROM {_RUNS.name} WHERE id = ?", [("run_id", _RUNS.c.id)],
                       conn.dialect).run(conn, {"run_id": run_id})
    return found[0] if found else None  # type: ignore[index]


def finish_visit(
    visit_id: str,
    status: VisitStatus = "completed",
    *,
    output: Any = None,
    context_diff: list[dict] | None = None,
    error: str | None = None,
    next_node: str | None = None,
    now: datetime | None = None,
) -> NodeVisit:
    """Close a visit: status, output, context diff, error, next node, end time and duration."""
    check(status, VISIT_STATUSES, "visit status")
    now = now or utcnow()
    with session(write=True) as s, _settled():
        return _close_visit(s, visit_id, status, output, context_diff, error, next_node, now)


def _close_visit(s, visit_id, status, output, context_diff, error, next_node, now) -> NodeVisit:
    with _pending_lock:
        _open.pop(visit_id, None)
    visit = require_row(s, NodeVisit, visit_id, lock=True)
    visit.status, visit.output, visit.error, visit.next_node = status, output, error, next_node
    visit.context_diff = context_diff or []
    visit.ended_at, visit.duration_ms = now, max(0, ms_between(visit.started_at, now))
    s.add(visit)
    return visit


def checkpoint_visit(
    visit_id: str,
    run_id: str,
    *,
    status: VisitStatus = "completed",
    output: Any = None,
    context_diff: list[dict] | None = None,
    context: dict,
    next_node: str | None = None,
    error: str | None = None,
    now: datetime | None = None,
) -> NodeVisit:
    """Close a visit and store the run's new context in one transaction (and beat the heart).

    This is the durability point: after a crash, a visit is either done with its context
    written, or not done at all, so a resume never repeats or skips its effects.
    """
    check(status, VISIT_STATUSES, "visit status")
    now = now or utcnow()
    with session(write=True) as s, _settled():
        visit = _close_visit(s, visit_id, status, output, context_diff, error, next_node, now)
        if visit.run_id != run_id:
            raise StoreError(f"visit {visit_id} belongs to run {visit.run_id}, not {run_id}")
        s.exec(update(Run).where(col(Run.id) == run_id).values(context=context, heartbeat_at=now))
    return visit


# --- reading visits ----------------------------------------------------------------------------


def get_visit(visit_id: str) -> NodeVisit | None:
    return get_row(NodeVisit, visit_id)


@overload
def visits_for_run(run_id: str, *, light: Literal[False] = ...) -> list[NodeVisit]: ...
@overload
def visits_for_run(run_id: str, *, light: Literal[True]) -> list[dict[str, Any]]: ...
def visits_for_run(run_id: str, *, light: bool = False) -> list[NodeVisit] | list[dict[str, Any]]:
    """All visits of a run in the order they started: whole rows, or with ``light=True`` dicts of
    :data:`VISIT_COLUMNS` (the dashboard reads the 2,000 visits of a long run at once)."""
    with session() as s:
        if light:
            q = select(*VISIT_COLUMNS).where(NodeVisit.run_id == run_id)  # type: ignore[call-overload]
            return mappings(s.exec(q.order_by(col(NodeVisit.sequence))))
        return list(s.exec(in_order(run_id)).all())


def in_order(run_id: str) -> SelectOfScalar[NodeVisit]:
    """The query of a run's whole visits in the order they started (for a caller's own transaction)."""
    return select(NodeVisit).where(NodeVisit.run_id == run_id).order_by(col(NodeVisit.sequence))


def node_visits(run_id: str, node_id: str, *, limit: int = 20, offset: int = 0,
                top_only: bool = False) -> tuple[list[NodeVisit], int]:
    """Whole visits of one node of a run (newest first, foreach items included unless
    ``top_only``: then only the node's own visits, whose items :func:`child_visits` lists), and how many."""
    where: tuple[Any, ...] = (col(NodeVisit.run_id) == run_id, col(NodeVisit.node_id) == node_id)
    if top_only:
        where = (*where, col(NodeVisit.parent_visit_id).is_(None))
    with session() as s:
        total = s.exec(select(func.count()).select_from(NodeVisit).where(*where)).one()
        q = select(NodeVisit).where(*where).order_by(col(NodeVisit.sequence).desc())
        rows = list(s.exec(page(q, limit, offset)).all())
    return rows, int(total)


def last_changing_node(run_id: str, *, batch: int = 50) -> str | None:
    """The node of the run's latest top-level visit that changed the context, or None: where
    the story of an ended run is (its final node changes nothing). Reads newest first, a batch
    at a time, and stops at the first change (nearly always in the first batch)."""
    where = (col(NodeVisit.run_id) == run_id, col(NodeVisit.parent_visit_id).is_(None))
    offset = 0
    with session() as s:
        while True:
            q = select(NodeVisit.node_id, NodeVisit.context_diff).where(*where).order_by(col(NodeVisit.sequence).desc())
            rows = s.exec(q.offset(offset).limit(batch)).all()
            for node_id, diff in rows:
                if diff:
                    return node_id
            if len(rows) < batch:
                return None
            offset += batch


def top_level_spans(run_ids: Iterable[str]) -> dict[str, list[tuple[str, datetime, datetime | None]]]:
    """``(status, started_at, ended_at)`` of each run's top-level visits in order, for a page of
    runs in one query: where a run lay failed before it was resumed (``ui.format.run_seconds``)."""
    ids = list(dict.fromkeys(run_ids))
    out: dict[str, list[tuple[str, datetime, datetime | None]]] = {i: [] for i in ids}
    if not ids:
        return out
    q = (select(NodeVisit.run_id, NodeVisit.status, NodeVisit.started_at, NodeVisit.ended_at)
         .where(col(NodeVisit.run_id).in_(ids), col(NodeVisit.parent_visit_id).is_(None))
         .order_by(col(NodeVisit.run_id), col(NodeVisit.sequence)))
    with session() as s:
        for run_id, status, started, ended in s.exec(q).all():
            out[run_id].append((status, started, ended))
    return out


def child_visits(run_id: str, parent_visit_id: str) -> list[NodeVisit]:
    """The item visits of a foreach/branch visit, in sequence order."""
    with session() as s:
        q = select(NodeVisit).where(NodeVisit.run_id == run_id, NodeVisit.parent_visit_id == parent_visit_id)
        return list(s.exec(q.order_by(col(NodeVisit.sequence))).all())


def last_completed_visits(run_id: str) -> list[NodeVisit]:
    """The checkpoints a resume starts from: for every (parent visit, node, item) of the run,
    its latest ``completed`` visit, in sequence order.

    The last element is the last node the run completed (its ``next_node`` is where to go on);
    the others tell a resumed foreach or branch which items are already done.
    """
    latest: dict[tuple, NodeVisit] = {}
    for visit in visits_for_run(run_id):
        if visit.status == "completed":
            latest[(visit.parent_visit_id, visit.node_id, visit.item_key)] = visit
    return sorted(latest.values(), key=lambda v: v.sequence)


# --- LLM and tool calls ------------------------------------------------------------------------


def record_llm_call(
    run_id: str,
    model: str,
    *,
    visit_id: str | None = None,
    messages: Any = None,
    response: Any = None,
    tools: Any = None,
    tokens_in: int = 0,
    tokens_out: int = 0,
    cost_usd: float = 0.0,
    latency_ms: int | None = None,
    attempt: int = 1,
    repair: bool = False,
    cassette_key: str | None = None,
    offline: bool = False,
    error: str | None = None,
    workstream_id: str | None = None,
) -> LlmCall:
    """Store one model call and add its cost and tokens to the run's totals (same transaction).
    A workstream's call (``workstream_id``) has no visit of its own (:mod:`flows.store.workstreams`)."""
    values = dict(
        id=new_id(), run_id=run_id, visit_id=visit_id, model=model, messages=messages, response=response, tools=tools,
        tokens_in=tokens_in, tokens_out=tokens_out, cost_usd=cost_usd, latency_ms=latency_ms, attempt=attempt,
        repair=repair, cassette_key=cassette_key, offline=offline, error=error, workstream_id=workstream_id,
        created_at=utcnow(),
    )
    spend = {"run_id": run_id, "cost": cost_usd, "tokens": tokens_in + tokens_out}
    # on the path of every model call: the driver's cursor on SQLite, else Core statements built once
    with hot_transaction() as conn:
        if _on_driver(conn):
            driver.insert(_LLM_CALLS, tuple(values), conn.dialect).run(conn, values)
            driver.sql("add_spend", f"UPDATE {_RUNS.name} SET cost_usd = cost_usd + ?, tokens = tokens + ? WHERE id = ?",
                       [("cost", _RUNS.c.cost_usd), ("tokens", _RUNS.c.tokens), ("run_id", _RUNS.c.id)],
                       conn.dialect).run(conn, spend)
        else:
            _core(conn).execute(_INSERT_LLM_CALL, values)
            _core(conn).execute(_ADD_SPEND, spend)
    return LlmCall.model_construct(**values)


def llm_calls_for_run(run_id: str, *, visit_id: str | None = None) -> list[LlmCall]:
    return _calls(LlmCall, run_id, None if visit_id is None else [visit_id])


def earlier_llm_answer(visit_id: str, cassette_key: str) -> tuple[str, str, bool, Any] | None:
    """The answer an earlier, unfinished visit of the same node (same item and attempt) got to the
    request with ``cassette_key`` — the n-th such answer when this visit already has n — as
    (call id, model, offline, response); None when there is none.

    On the path of every model call of a resumed run, and nearly always empty: one query finds
    the earlier unfinished visits first."""
    from sqlalchemy import and_
    from sqlalchemy.orm import aliased

    visits, calls = _VISITS, _LLM_CALLS
    this = aliased(visits)
    answered = and_(calls.c.cassette_key == cassette_key, calls.c.error.is_(None))
    with connection() as conn:
        earlier = conn.execute(
            select(visits.c.id).join(this, this.c.id == visit_id)
            .where(visits.c.run_id == this.c.run_id, visits.c.node_id == this.c.node_id,
                   visits.c.attempt == this.c.attempt, visits.c.status != "completed",
                   visits.c.sequence < this.c.sequence, visits.c.item_key.is_not_distinct_from(this.c.item_key))
            .order_by(visits.c.sequence.desc())
        ).scalars().all()
        if not earlier:
            return None
        done_here = conn.execute(
            select(func.count()).select_from(calls).where(calls.c.visit_id == visit_id, answered)
        ).scalar_one()
        for earlier_id in earlier:
            rows = conn.execute(
                select(calls.c.id, calls.c.model, calls.c.offline, calls.c.response)
                .where(calls.c.visit_id == earlier_id, answered).order_by(calls.c.created_at, calls.c.id)
            ).all()
            if len(rows) > done_here:
                row = rows[done_here]
                return row.id, row.model, row.offline, row.response
    return None


def record_tool_call(
    run_id: str,
    tool: str,
    *,
    visit_id: str | None = None,
    args: Any = None,
    result: Any = None,
    status: str = "completed",
    latency_ms: int | None = None,
    error: str | None = None,
    workstream_id: str | None = None,
) -> ToolCall:
    return add_row(ToolCall(run_id=run_id, visit_id=visit_id, tool=tool, args=args, result=result, status=status,
                            latency_ms=latency_ms, error=error, workstream_id=workstream_id))


def tool_calls_for_run(run_id: str, *, visit_id: str | None = None) -> list[ToolCall]:
    return _calls(ToolCall, run_id, None if visit_id is None else [visit_id])


def calls_for_visits(run_id: str, visit_ids: Iterable[str]) -> tuple[dict[str, list[LlmCall]], dict[str, list[ToolCall]]]:
    """LLM calls and tool calls of some visits of a run, grouped by visit id, oldest first."""
    ids = list(dict.fromkeys(visit_ids))
    llm: dict[str, list[LlmCall]] = {}
    tools: dict[str, list[ToolCall]] = {}
    if not ids:
        return llm, tools
    for call in _calls(LlmCall, run_id, ids):
        llm.setdefault(call.visit_id or "", []).append(call)
    for tool_call in _calls(ToolCall, run_id, ids):
        tools.setdefault(tool_call.visit_id or "", []).append(tool_call)
    return llm, tools


def _calls(model: type[_Call], run_id: str, visit_ids: list[str] | None) -> list[_Call]:
    """The calls of a run (of some of its visits), oldest first."""
    with session() as s:
        q = select(model).where(model.run_id == run_id)
        if visit_ids is not None:
            q = q.where(col(model.visit_id) == visit_ids[0] if len(visit_ids) == 1 else col(model.visit_id).in_(visit_ids))
        # created_at can tie within a clock tick; rowid-like id order is random, so add it only
        # to make the order stable.
        return list(s.exec(q.order_by(col(model.created_at), col(model.id))).all())


def last_answer_call(visit_id: str) -> str | None:
    """The id of a visit's last model call that got an answer (the one an agent's result is)."""
    with session() as s:
        q = (select(LlmCall.id).where(LlmCall.visit_id == visit_id, col(LlmCall.error).is_(None))
             .order_by(col(LlmCall.created_at).desc(), col(LlmCall.id).desc()).limit(1))
        return s.exec(q).first()
