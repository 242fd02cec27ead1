"""Runs: creating them, their status machine, their totals, listing them, and crash detection.

Each function opens its own short transaction (:func:`flows.store.db.session`) and returns
detached rows or plain dicts, so callers never hold a session. Functions that read then write
use ``session(write=True)``, which takes SQLite's write lock up front and, on PostgreSQL, a row
lock (``FOR UPDATE``) on the run. Counters (cost, tokens) and the heartbeat are one UPDATE each,
safe from concurrent branches of a run.

:func:`list_runs` answers "which runs match these filters" for both ``ergon runs list`` (whole
rows) and the dashboard (``light=True``: only :data:`RUN_COLUMNS`, never a run's context, which
can be 64 KB), so the two agree on what a filter means, and the ``(status|definition_name,
created_at)`` indexes serve both.

Timestamps are aware UTC datetimes; functions that depend on "now" take an optional ``now`` so
tests need no clock tricks.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Literal, overload

from sqlmodel import col, func, or_, select, update

from flows.store import definitions as definition_store
from flows.store import visits as visit_store
from flows.store._common import add_row, check, get_row, mappings, page, require_row
from flows.store.db import session
from flows.store.errors import InvalidTransition, NotFound, StoreError
from flows.moments import announce
from flows.store.models import (
    RUN_ENDED,
    RUN_STATUSES,
    RUN_TERMINAL,
    RUN_TRIGGERS,
    NodeVisit,
    Run,
    RunStatus,
    RunTrigger,
    utcnow,
)

# Allowed run status changes. Resuming a failed or crashed run sends it back to running; a run
# marked crashed whose process turns out to be alive may still finish. completed and cancelled
# are final (replay makes a new run).
RUN_TRANSITIONS: dict[RunStatus, frozenset[RunStatus]] = {
    "pending": frozenset({"running", "paused", "failed", "crashed", "cancelled", "cancelling"}),
    "running": frozenset({"paused", "completed", "failed", "crashed", "cancelled", "cancelling"}),
    "paused": frozenset({"running", "failed", "crashed", "cancelled", "cancelling"}),
    "cancelling": frozenset({"cancelled", "failed", "crashed", "completed"}),
    "failed": frozenset({"pending", "running"}),
    "crashed": frozenset({"pending", "running", "completed", "failed", "cancelled"}),
    "completed": frozenset(),
    "cancelled": frozenset(),
}

#: The columns of the dashboard's run rows (``list_runs(light=True)``, :func:`run_summaries`).
RUN_COLUMNS = (
    Run.id, Run.definition_name, Run.definition_version, Run.status, Run.outcome, Run.trigger, Run.started_by,
    Run.created_at, Run.started_at, Run.ended_at, Run.cost_usd, Run.tokens, Run.parent_run_id, Run.error,
)


# --- creating and reading runs -----------------------------------------------------------------


def create_run(
    definition_name: str,
    *,
    content: Any = None,
    content_hash: str | None = None,
    definition_version: int | None = None,
    inputs: dict | None = None,
    context: dict | None = None,
    trigger: RunTrigger = "manual",
    started_by: str | None = None,
    parent_run_id: str | None = None,
    parent_visit_id: str | None = None,
    prefect_flow_run_id: str | None = None,
    run_id: str | None = None,
    catalog_sources: list[str] | None = None,
    pid: int | None = None,
    host: str | None = None,
    run_type: str = "programmatic",
    input_submission_id: str | None = None,
) -> Run:
    """Record a new ``pending`` run (``run_type``: programmatic, or supervised; a template run
    names the submission it reads, ``input_submission_id``).

    ``pid``/``host`` name the process that will start it (its owner until the flow body stamps
    its own): a pending run whose owner died before starting it is found by
    :func:`mark_stale_runs_crashed`.

    Pass the definition ``content`` (it is snapshotted, deduplicated by hash) or the
    ``content_hash`` of a snapshot stored earlier; the run keeps executing that snapshot.
    ``catalog_sources`` are the folders (and file) its definitions were loaded from.
    """
    check(trigger, RUN_TRIGGERS, "trigger")
    if content is not None:
        content_hash = definition_store.snapshot_definition(content)
    row = Run(
        definition_name=definition_name, definition_version=definition_version, content_hash=content_hash,
        inputs=inputs or {}, context=context or {}, trigger=trigger,
        started_by=started_by, parent_run_id=parent_run_id, parent_visit_id=parent_visit_id,
        prefect_flow_run_id=prefect_flow_run_id, catalog_sources=catalog_sources or None, pid=pid, host=host,
        run_type=run_type, input_submission_id=input_submission_id,
    )
    if run_id:
        row.id = run_id
    return add_row(row)


def get_run(run_id: str) -> Run | None:
    return get_row(Run, run_id)


def get_run_by_prefect_id(prefect_flow_run_id: str) -> Run | None:
    """The run linked to a Prefect flow run (a retried flow run finds its run again)."""
    with session() as s:
        q = (select(Run).where(Run.prefect_flow_run_id == prefect_flow_run_id)
             .order_by(col(Run.created_at).desc()))
        return s.exec(q.limit(1)).first()


def run_status(run_id: str) -> RunStatus | None:
    """Just the status (cheap enough to poll for cancellation between nodes); None if unknown."""
    with session() as s:
        return s.exec(select(Run.status).where(Run.id == run_id)).first()  # type: ignore[return-value]


def require_run(run_id: str) -> Run:
    with session() as s:
        return require_row(s, Run, run_id)


def child_runs(run_id: str) -> list[Run]:
    """Sub-process runs started by ``run_id``, oldest first."""
    with session() as s:
        q = select(Run).where(Run.parent_run_id == run_id).order_by(col(Run.created_at), col(Run.id))
        return list(s.exec(q).all())


# --- status and updates ------------------------------------------------------------------------


def set_run_status(
    run_id: str,
    status: RunStatus,
    *,
    outcome: str | None = None,
    error: str | None = None,
    error_kind: str | None = None,
    now: datetime | None = None,
    pid: int | None = None,
    host: str | None = None,
    expect: Iterable[RunStatus] | None = None,
    context: dict | None = None,
) -> Run:
    """Move a run to ``status``; raises :class:`InvalidTransition` for an impossible change, and
    when ``expect`` is given and the run is not in one of those statuses (a compare-and-set: of
    two processes claiming the same change, one wins). ``context``, when given, is stored in the
    same transaction: a run is never seen ended without its final context.

    Setting the same status again is allowed (retries of the same report). Going to ``running``
    stamps ``started_at`` (first time), the heartbeat, and the pid/host of the calling process
    (the one executing the run, which :func:`mark_stale_runs_crashed` checks), and clears the
    ``ended_at``, ``error`` and ``error_kind`` of an earlier failure. Going back to ``pending``
    with a ``pid`` (a resume claiming the run) makes that process its owner in the same
    transaction, so that the dead process it replaces is never taken for the owner of the run
    being started. Terminal states stamp ``ended_at``.
    """
    check(status, RUN_STATUSES, "run status")
    now = now or utcnow()
    with session(write=True) as s:
        run = require_row(s, Run, run_id, lock=True)
        current: RunStatus = run.status  # type: ignore[assignment]
        if expect is not None and current not in expect:
            raise InvalidTransition(f"run {run_id} is {current}, not {' or '.join(expect)}")
        _move(run, status, now, pid=pid, host=host)
        run.outcome = outcome if outcome is not None else run.outcome
        run.error = error if error is not None else run.error
        run.error_kind = error_kind if error_kind is not None else run.error_kind
        if context is not None:
            run.context = context
        s.add(run)
    if status != current:
        announce("run.status", run, current)
    return run


def take_up_run(run_id: str | None, prefect_flow_run_id: str | None, *, pid: int, host: str,
                now: datetime | None = None) -> tuple[Run, list[NodeVisit]] | None:
    """The run a flow body is about to execute, taken up by this process in one transaction:
    ``run_id``'s, else the latest one linked to ``prefect_flow_run_id`` (Prefect ran the same flow
    run again). It is linked to that flow run and marked ``running`` here (``pid``/``host``, by
    :func:`set_run_status`'s rules: a run that ended cannot run again), and returned with its
    visits so far in the order they started. None when neither names a run.

    One transaction instead of four (read, link, visits, status): on PostgreSQL each was a round
    trip of its own, and on SQLite each took the write lock."""
    now = now or utcnow()
    with session(write=True) as s:
        run = s.get(Run, run_id, with_for_update=True) if run_id else None
        if run is None and prefect_flow_run_id:
            q = (select(Run).where(Run.prefect_flow_run_id == prefect_flow_run_id)
                 .order_by(col(Run.created_at).desc()).limit(1).with_for_update())
            run = s.exec(q).first()
        if run is None:
            return None
        if prefect_flow_run_id:
            run.prefect_flow_run_id = prefect_flow_run_id
        previous = run.status
        if run.status == "running":  # executed again in place (a retried flow run): its new process
            run.pid, run.ran_pid, run.host = pid, pid, host
        else:
            _move(run, "running", now, pid=pid, host=host)
        s.add(run)
        past = list(s.exec(visit_store.in_order(run.id)).all())
    if previous != "running":
        announce("run.status", run, previous)
    return run, past


def _move(run: Run, status: RunStatus, now: datetime, *, pid: int | None, host: str | None) -> None:
    """Give ``run`` its new ``status`` (and what goes with it), or raise :class:`InvalidTransition`."""
    current: RunStatus = run.status  # type: ignore[assignment]
    if status != current and status not in RUN_TRANSITIONS[current]:
        allowed = ", ".join(sorted(RUN_TRANSITIONS[current])) or "nothing (final)"
        raise InvalidTransition(f"run {run.id}: cannot go from {current} to {status} (allowed: {allowed})")
    if status == "running" and current != "running":
        _mark_running(run, now, pid, host)
    elif status == "pending" and pid is not None:  # claimed to start again: its owner until it runs
        run.pid, run.host = pid, host or socket.gethostname()
    if status in RUN_TERMINAL:
        run.ended_at = run.ended_at if current == status else now
    run.status = status


def _mark_running(run: Run, now: datetime, pid: int | None, host: str | None) -> None:
    run.started_at = run.started_at or now
    run.ended_at, run.error, run.error_kind = None, None, None
    run.heartbeat_at = now
    run.pid = pid if pid is not None else os.getpid()
    run.ran_pid = run.pid
    run.host = host or socket.gethostname()


# Columns a caller may set directly; status has its own function, ids and timestamps never change.
_RUN_UPDATABLE = frozenset({
    "prefect_flow_run_id", "definition_version", "outcome", "context", "error", "heartbeat_at", "pid", "host",
    "catalog_sources", "input_submission_id", "deployment", "work_pool",
})


def update_run(run_id: str, **fields: Any) -> Run:
    """Set some of ``prefect_flow_run_id, definition_version, outcome, context, error,
    heartbeat_at, pid, host, catalog_sources, input_submission_id, deployment, work_pool`` on a run."""
    unknown = set(fields) - _RUN_UPDATABLE
    if unknown:
        raise StoreError(f"update_run cannot set {', '.join(sorted(unknown))} (use set_run_status for status)")
    with session(write=True) as s:
        run = require_row(s, Run, run_id, lock=True)
        for key, value in fields.items():
            setattr(run, key, value)
        s.add(run)
    return run


def update_run_context(run_id: str, context: dict, *, heartbeat: bool = True, now: datetime | None = None) -> None:
    """Replace the run's context (after a node's writes were accepted); also beats the heart."""
    values: dict[str, Any] = {"context": context}
    if heartbeat:
        values["heartbeat_at"] = now or utcnow()
    _update_run_values(run_id, values)


def heartbeat(run_id: str, now: datetime | None = None) -> None:
    """Tell :func:`mark_stale_runs_crashed` the run's process is alive."""
    _update_run_values(run_id, {"heartbeat_at": now or utcnow()})


def add_run_usage(run_id: str, *, cost_usd: float = 0.0, tokens: int = 0) -> None:
    """Add to the run's totals in one UPDATE (safe with concurrent branches)."""
    _update_run_values(run_id, {"cost_usd": col(Run.cost_usd) + cost_usd, "tokens": col(Run.tokens) + tokens})


def _update_run_values(run_id: str, values: dict[str, Any]) -> None:
    with session(write=True) as s:
        result = s.exec(update(Run).where(col(Run.id) == run_id).values(**values))
        if result.rowcount == 0:
            raise NotFound(f"no run {run_id!r}")


# --- listing -----------------------------------------------------------------------------------


@overload
def list_runs(
    status: RunStatus | Iterable[RunStatus] | None = ..., definition: str | None = ..., text: str | None = ...,
    since: datetime | None = ..., until: datetime | None = ..., limit: int = ..., offset: int = ...,
    *, light: Literal[False] = ...,
) -> tuple[list[Run], int]: ...
@overload
def list_runs(
    status: RunStatus | Iterable[RunStatus] | None = ..., definition: str | None = ..., text: str | None = ...,
    since: datetime | None = ..., until: datetime | None = ..., limit: int = ..., offset: int = ...,
    *, light: Literal[True],
) -> tuple[list[dict[str, Any]], int]: ...
def list_runs(
    status: RunStatus | Iterable[RunStatus] | None = None,
    definition: str | None = None,
    text: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    limit: int = 50,
    offset: int = 0,
    *,
    light: bool = False,
) -> tuple[list[Run], int] | tuple[list[dict[str, Any]], int]:
    """One page of runs, newest first, and the number of runs matching the filters.

    ``status`` is one status or several; ``text`` is a case-insensitive substring of the run id,
    definition, starter, outcome or Prefect flow-run id; ``since``/``until`` bound ``created_at``
    (``until`` excluded). Status and definition filters are served by the
    ``(status|definition_name, created_at)`` indexes, so pages stay fast on large stores; a page
    costs one COUNT over the filter's index plus ``limit`` rows.

    Whole :class:`Run` rows by default; ``light=True`` gives dicts of :data:`RUN_COLUMNS` (the
    dashboard's tables).
    """
    where: list[Any] = []
    if status:
        statuses = [status] if isinstance(status, str) else list(status)
        where.append(col(Run.status) == statuses[0] if len(statuses) == 1 else col(Run.status).in_(statuses))
    if definition:
        where.append(col(Run.definition_name) == definition)
    if text:
        columns = (Run.id, Run.definition_name, Run.started_by, Run.outcome, Run.prefect_flow_run_id)
        where.append(or_(*(col(c).icontains(text, autoescape=True) for c in columns)))
    if since:
        where.append(col(Run.created_at) >= since)
    if until:
        where.append(col(Run.created_at) < until)
    newest_first = (col(Run.created_at).desc(), col(Run.id).desc())
    with session() as s:
        total = int(s.exec(select(func.count()).select_from(Run).where(*where)).one())
        if light:
            return mappings(s.exec(page(select(*RUN_COLUMNS).where(*where).order_by(*newest_first),  # type: ignore[call-overload]
                                        limit, offset))), total
        return list(s.exec(page(select(Run).where(*where).order_by(*newest_first), limit, offset)).all()), total


def run_summaries(run_ids: Iterable[str]) -> dict[str, dict[str, Any]]:
    """The :data:`RUN_COLUMNS` of the given runs, by id (to refresh live rows of a page)."""
    ids = list(dict.fromkeys(run_ids))
    if not ids:
        return {}
    with session() as s:
        q = select(*RUN_COLUMNS).where(col(Run.id).in_(ids))  # type: ignore[call-overload]
        return {row["id"]: row for row in mappings(s.exec(q))}


def definition_names_with_runs() -> list[str]:
    """Distinct definition names that have runs (for the dashboard's filter)."""
    with session() as s:
        return list(s.exec(select(Run.definition_name).distinct().order_by(col(Run.definition_name))).all())


# --- crash detection ---------------------------------------------------------------------------


#: How the reason crash detection gives a run, and the visits it closes, begins.
CRASHED = "crashed: "


def mark_stale_runs_crashed(
    now: datetime | None = None, heartbeat_timeout: timedelta | float = timedelta(minutes=5),
    run_ids: Iterable[str] | None = None,
) -> list[Run]:
    """Mark runs whose process is gone as ``crashed``; return them (only ``run_ids`` when given).

    The candidates are ``running`` runs, ``pending`` ones with an owner process (the one that
    recorded it to start it, or claimed it to resume it: stale only when that process is gone),
    and ``paused`` runs with a visit still ``running``: a process blocks in that visit waiting
    for a person. A paused run with no running visit is *suspended* (under a deployment its
    process exits on purpose, and Prefect reschedules it when the answer comes), so it is never
    a candidate. A candidate is stale when its last heartbeat (or start, if it never beat) is
    older than ``heartbeat_timeout`` (a timedelta or seconds), or when it runs on this host
    under a pid that no longer exists or is a zombie. The reason goes into ``error``; the run's
    visits still ``running`` become ``failed``, so a resume restarts them.
    """
    now = now or utcnow()
    timeout = heartbeat_timeout if isinstance(heartbeat_timeout, timedelta) else timedelta(seconds=heartbeat_timeout)
    crashed = []
    for run in _crash_candidates(run_ids):
        reason = _stale_reason(run, now, timeout)
        if reason and (row := _crash(run.id, run.status, reason, now)) is not None:
            crashed.append(row)
    return crashed


def _crash_candidates(run_ids: Iterable[str] | None = None) -> list[Run]:
    """The runs :func:`mark_stale_runs_crashed` looks at (only ``run_ids`` when given)."""
    blocking = select(NodeVisit.run_id).where(col(NodeVisit.status) == "running")
    where: list[Any] = [or_(col(Run.status) == "running",
                            (col(Run.status) == "paused") & col(Run.id).in_(blocking),
                            (col(Run.status) == "pending") & col(Run.pid).is_not(None))]
    if run_ids is not None:
        where.append(col(Run.id).in_(list(run_ids)))
    with session() as s:
        return list(s.exec(select(Run).where(*where)).all())


def warm_crash_detection() -> None:
    """Ask once, for no run, what crash detection asks, so that SQLAlchemy has configured the
    models and compiled the queries before anyone waits for them (the dashboard's warm-up: about
    0.1 s of its first page otherwise). Reads only; marks nothing."""
    from sqlalchemy.orm import configure_mappers

    configure_mappers()
    _crash_candidates(run_ids=())
    ended_unsettled()
    queued_on_deployments()


def queued_on_deployments() -> list[Run]:
    """Pending runs handed to a deployment (a flow run exists, no process owns them yet)."""
    with session() as s:
        q = select(Run).where(col(Run.status) == "pending", col(Run.pid).is_(None),
                              col(Run.prefect_flow_run_id).is_not(None), col(Run.deployment).is_not(None))
        return list(s.exec(q).all())


def mark_lost(run_id: str, reason: str, now: datetime | None = None) -> Run | None:
    """A pending run that no flow body will take up (see :func:`queued_on_deployments`) is
    ``crashed`` with ``reason``; None when it moved on meanwhile (a body took it up after all)."""
    with session() as s:
        run = s.get(Run, run_id)
        if run is None or run.status != "pending" or run.pid is not None:
            return None
    return _crash(run_id, "pending", f"{CRASHED}{reason}", now or utcnow())


def _stale_reason(run: Run, now: datetime, timeout: timedelta) -> str | None:
    if run.pid and run.host == socket.gethostname() and not _pid_alive(run.pid):
        if run.status == "pending":
            return f"{CRASHED}process {run.pid} on {run.host} was to start the run and died before it did"
        return f"{CRASHED}process {run.pid} on {run.host} is gone"
    if run.status == "pending":  # never started, so no heartbeat: only its owner's death counts
        return None
    last = run.heartbeat_at or run.started_at or run.created_at
    if last < now - timeout:
        return f"{CRASHED}no heartbeat since {last.isoformat()} (timeout {timeout.total_seconds():g}s)"
    return None


def release_ended(*, run_id: str | None = None, prefect_flow_run_id: str | None = None) -> None:
    """Prefect has the final state of the run (by its id, or its flow run's): if the store ended
    it, it no longer names a process (see :func:`ended_unsettled`)."""
    which = col(Run.id) == run_id if run_id is not None else col(Run.prefect_flow_run_id) == prefect_flow_run_id
    with session(write=True) as s:
        s.exec(update(Run).where(which, col(Run.status).in_(RUN_ENDED), col(Run.pid).is_not(None)).values(pid=None))


def ended_unsettled(now: datetime | None = None,
                    heartbeat_timeout: timedelta | float = timedelta(minutes=5)) -> list[Run]:
    """Runs the store ended whose process died before Prefect heard how they ended.

    A run's process writes its end (:data:`~flows.store.models.RUN_ENDED`), then returns the flow's final
    state to Prefect, which then clears the run's ``pid`` (:func:`release_ended`, a flow hook). A
    run ended with a ``pid`` still set whose process is gone — on this host: the pid no longer
    executes; elsewhere: it ended longer than ``heartbeat_timeout`` ago — was killed in between,
    and its flow run may still be ``Running`` in Prefect."""
    now = now or utcnow()
    timeout = heartbeat_timeout if isinstance(heartbeat_timeout, timedelta) else timedelta(seconds=heartbeat_timeout)
    with session() as s:
        rows = s.exec(select(Run).where(col(Run.status).in_(RUN_ENDED), col(Run.pid).is_not(None))).all()
    here = socket.gethostname()
    return [r for r in rows if (not _pid_alive(r.pid) if r.host == here  # type: ignore[arg-type]
                                else (r.ended_at or r.created_at) < now - timeout)]


def _pid_alive(pid: int) -> bool:
    """Whether ``pid`` is a process on this host that still executes. A zombie — killed or ended,
    not yet reaped by its parent (a dashboard or webhook server that started the run; a
    container's first process that never reaps) — keeps its pid and executes nothing."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # exists, owned by someone else
    except OSError:
        return False
    try:  # Linux: the state letter follows the parenthesised command name
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True  # no /proc (or it just went): os.kill's answer stands
    return state not in ("Z", "X")


def _crash(run_id: str, seen: str, reason: str, now: datetime) -> Run | None:
    with session(write=True) as s:
        run = s.get(Run, run_id, with_for_update=True)
        if run is None or run.status != seen:
            return None  # it moved on while we looked
        # the process that ran it died: the world's doing, whatever the definition says
        run.status, run.error, run.error_kind, run.ended_at = "crashed", reason, "world", now
        s.add(run)
        s.exec(
            update(NodeVisit)
            .where(col(NodeVisit.run_id) == run_id, col(NodeVisit.status) == "running")
            .values(status="failed", error=reason, error_kind="world", ended_at=now)
        )
    announce("run.status", run, seen)
    return run
