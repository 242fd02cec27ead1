"""The queries the rest of Ergon uses: every read and write of the store goes through here.

Each function opens its own short transaction (:func:`flows.store.db.session`) and returns
detached model instances or plain dicts, so callers never hold a session and never write SQL.
Functions that read then write use ``session(write=True)``, which takes SQLite's write lock up
front and, on PostgreSQL, row locks (``FOR UPDATE``) where two writers could race.

Timestamps are aware UTC datetimes; functions that depend on "now" take an optional ``now`` so
tests need no clock tricks. Errors a caller can act on are :class:`StoreError` subclasses.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import Any, TypeVar

from sqlalchemy.exc import IntegrityError
from sqlmodel import SQLModel, func, insert, or_, select, update

from flows.errors import ErgonError
from flows.store.db import connection, session
from flows.store.models import (
    ARTIFACT_TYPES,
    RUN_STATUSES,
    RUN_TERMINAL,
    RUN_TRIGGERS,
    TASK_ACTIONS,
    TASK_CHANNELS,
    TASK_OPEN,
    TASK_STATUSES,
    VISIT_STATUSES,
    Artifact,
    Definition,
    DefinitionSnapshot,
    DefinitionVersion,
    Group,
    HumanTask,
    LlmCall,
    Membership,
    NodeVisit,
    Run,
    Secret,
    TaskEvent,
    ToolCall,
    TriggerState,
    User,
    new_id,
    utcnow,
)

M = TypeVar("M", bound=SQLModel)
#: Core tables for the per-visit hot path (see :func:`flows.store.db.connection`).
_VISITS = NodeVisit.__table__
_RUNS = Run.__table__
_LLM_CALLS = LlmCall.__table__


class StoreError(ErgonError):
    """A request the store refuses (unknown id, impossible state change, bad value)."""


class NotFound(StoreError, LookupError):
    pass


class InvalidTransition(StoreError, ValueError):
    pass


class TaskConflict(StoreError):
    """A human task is no longer in a state that allows the action (taken, answered, closed)."""


# Allowed run status changes. Resuming a failed or crashed run sends it back to running; a run
# marked crashed whose process turns out to be alive may still finish. completed and cancelled
# are final (replay makes a new run).
RUN_TRANSITIONS: dict[str, frozenset[str]] = {
    "pending": frozenset({"running", "paused", "failed", "crashed", "cancelled", "cancelling"}),
    "running": frozenset({"paused", "completed", "failed", "crashed", "cancelled", "cancelling"}),
    "paused": frozenset({"running", "failed", "crashed", "cancelled", "cancelling"}),
    "cancelling": frozenset({"cancelled", "failed", "crashed", "completed"}),
    "failed": frozenset({"pending", "running"}),
    "crashed": frozenset({"pending", "running", "completed", "failed", "cancelled"}),
    "completed": frozenset(),
    "cancelled": frozenset(),
}


# --- helpers -----------------------------------------------------------------------------------


def content_hash(content: Any) -> str:
    """sha256 of the canonical JSON of ``content`` (sorted keys, no spaces): the snapshot id."""
    canonical = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def _check(value: str | None, allowed: Sequence[str], what: str) -> None:
    if value is not None and value not in allowed:
        raise StoreError(f"{what} {value!r} is not one of: {', '.join(allowed)}")


def _get(model: type[M], key: Any) -> M | None:
    with session() as s:
        return s.get(model, key)


def _require(s, model: type[M], key: Any, *, lock: bool | dict = False) -> M:
    row = s.get(model, key, with_for_update=lock)
    if row is None:
        raise NotFound(f"no {model.__name__} {key!r}")
    return row


def _add(row: M) -> M:
    with session(write=True) as s:
        s.add(row)
    return row


def _dump(row: SQLModel) -> dict:
    return row.model_dump(mode="json")


def _ms(start: datetime, end: datetime) -> int:
    return int((end - start).total_seconds() * 1000)


# --- definitions and snapshots -----------------------------------------------------------------


def snapshot_definition(content: Any) -> str:
    """Store ``content`` once under its hash (see :func:`content_hash`) and return the hash."""
    digest = content_hash(content)
    with session() as s:
        if s.get(DefinitionSnapshot, digest) is not None:
            return digest
    try:
        _add(DefinitionSnapshot(hash=digest, content=content))
    except IntegrityError:
        pass  # another writer stored the same content first: same hash, same content
    return digest


def get_snapshot(digest: str) -> Any | None:
    """The content stored under ``digest``, or None."""
    row = _get(DefinitionSnapshot, digest)
    return None if row is None else row.content


def save_draft(name: str, kind: str, content: Any) -> Definition:
    """Create the definition or replace its draft."""
    now = utcnow()
    with session(write=True) as s:
        row = s.get(Definition, name, with_for_update=True)
        if row is None:
            row = Definition(name=name, kind=kind, created_at=now)
        row.kind, row.draft_content, row.draft_hash, row.updated_at = kind, content, content_hash(content), now
        s.add(row)
    return row


def get_definition(name: str) -> Definition | None:
    return _get(Definition, name)


def list_definitions() -> list[Definition]:
    with session() as s:
        return list(s.exec(select(Definition).order_by(Definition.name)).all())


def publish_definition(
    name: str, *, content: Any = None, comment: str | None = None, published_by: str | None = None
) -> DefinitionVersion:
    """Publish ``content`` (default: the current draft) as the next version (1, 2, …)."""
    with session(write=True) as s:
        definition = _require(s, Definition, name, lock=True)
        content = definition.draft_content if content is None else content
        latest = s.exec(
            select(func.max(DefinitionVersion.version)).where(DefinitionVersion.definition_name == name)
        ).one()
        digest = content_hash(content)
        if s.get(DefinitionSnapshot, digest) is None:
            s.add(DefinitionSnapshot(hash=digest, content=content))
        row = DefinitionVersion(
            definition_name=name, version=(latest or 0) + 1, content=content, content_hash=digest,
            comment=comment, published_by=published_by,
        )
        s.add(row)
    return row


def list_versions(name: str) -> list[DefinitionVersion]:
    """Published versions of ``name``, newest first."""
    with session() as s:
        q = select(DefinitionVersion).where(DefinitionVersion.definition_name == name)
        return list(s.exec(q.order_by(DefinitionVersion.version.desc())).all())


def get_version(name: str, version: int | None = None) -> DefinitionVersion | None:
    """Version ``version`` of ``name``, or the latest when ``version`` is None."""
    with session() as s:
        q = select(DefinitionVersion).where(DefinitionVersion.definition_name == name)
        if version is not None:
            q = q.where(DefinitionVersion.version == version)
        return s.exec(q.order_by(DefinitionVersion.version.desc()).limit(1)).first()


# --- runs --------------------------------------------------------------------------------------


def create_run(
    definition_name: str,
    *,
    content: Any = None,
    content_hash: str | None = None,
    definition_version: int | None = None,
    inputs: dict | None = None,
    context: dict | None = None,
    trigger: str = "manual",
    started_by: str | None = None,
    parent_run_id: str | None = None,
    parent_visit_id: str | None = None,
    prefect_flow_run_id: str | None = None,
    run_id: str | None = None,
) -> Run:
    """Record a new ``pending`` run.

    Pass the definition ``content`` (it is snapshotted, deduplicated by hash) or the
    ``content_hash`` of a snapshot stored earlier; the run keeps executing that snapshot.
    """
    _check(trigger, RUN_TRIGGERS, "trigger")
    if content is not None:
        content_hash = snapshot_definition(content)
    row = Run(
        definition_name=definition_name, definition_version=definition_version, content_hash=content_hash,
        inputs=inputs or {}, context=context or {}, trigger=trigger,
        started_by=started_by, parent_run_id=parent_run_id, parent_visit_id=parent_visit_id,
        prefect_flow_run_id=prefect_flow_run_id,
    )
    if run_id:
        row.id = run_id
    return _add(row)


def get_run(run_id: str) -> Run | None:
    return _get(Run, run_id)


def get_run_by_prefect_id(prefect_flow_run_id: str) -> Run | None:
    """The run linked to a Prefect flow run (a retried flow run finds its run again)."""
    with session() as s:
        q = select(Run).where(Run.prefect_flow_run_id == prefect_flow_run_id).order_by(Run.created_at.desc())
        return s.exec(q.limit(1)).first()


def run_status(run_id: str) -> str | None:
    """Just the status (cheap enough to poll for cancellation between nodes); None if unknown."""
    with session() as s:
        return s.exec(select(Run.status).where(Run.id == run_id)).first()


def require_run(run_id: str) -> Run:
    with session() as s:
        return _require(s, Run, run_id)


def child_runs(run_id: str) -> list[Run]:
    """Sub-process runs started by ``run_id``, oldest first."""
    with session() as s:
        q = select(Run).where(Run.parent_run_id == run_id).order_by(Run.created_at, Run.id)
        return list(s.exec(q).all())


def set_run_status(
    run_id: str,
    status: str,
    *,
    outcome: str | None = None,
    error: str | None = None,
    now: datetime | None = None,
    pid: int | None = None,
    host: str | None = None,
) -> Run:
    """Move a run to ``status``; raises :class:`InvalidTransition` for an impossible change.

    Setting the same status again is allowed (retries of the same report). Going to ``running``
    stamps ``started_at`` (first time), the heartbeat, and the pid/host of the calling process
    (the one executing the run, which :func:`mark_stale_runs_crashed` checks), and clears the
    ``ended_at`` and ``error`` of an earlier failure. Terminal states stamp ``ended_at``.
    """
    _check(status, RUN_STATUSES, "run status")
    now = now or utcnow()
    with session(write=True) as s:
        run = _require(s, Run, run_id, lock=True)
        if status != run.status and status not in RUN_TRANSITIONS[run.status]:
            allowed = ", ".join(sorted(RUN_TRANSITIONS[run.status])) or "nothing (final)"
            raise InvalidTransition(f"run {run_id}: cannot go from {run.status} to {status} (allowed: {allowed})")
        if status == "running" and run.status != "running":
            _mark_running(run, now, pid, host)
        if status in RUN_TERMINAL:
            run.ended_at = run.ended_at if run.status == status else now
        run.status = status
        run.outcome = outcome if outcome is not None else run.outcome
        run.error = error if error is not None else run.error
        s.add(run)
    return run


def _mark_running(run: Run, now: datetime, pid: int | None, host: str | None) -> None:
    run.started_at = run.started_at or now
    run.ended_at, run.error = None, None
    run.heartbeat_at = now
    run.pid = pid if pid is not None else os.getpid()
    run.host = host or socket.gethostname()


# Columns a caller may set directly; status has its own function, ids and timestamps never change.
_RUN_UPDATABLE = frozenset({
    "prefect_flow_run_id", "definition_version", "outcome", "context", "error", "heartbeat_at", "pid", "host",
    "catalog_sources",
})


def update_run(run_id: str, **fields: Any) -> Run:
    """Set some of ``prefect_flow_run_id, definition_version, outcome, context, error,
    heartbeat_at, pid, host, catalog_sources`` on a run."""
    unknown = set(fields) - _RUN_UPDATABLE
    if unknown:
        raise StoreError(f"update_run cannot set {', '.join(sorted(unknown))} (use set_run_status for status)")
    with session(write=True) as s:
        run = _require(s, Run, run_id, lock=True)
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
    _update_run_values(run_id, {"cost_usd": Run.cost_usd + cost_usd, "tokens": Run.tokens + tokens})


def _update_run_values(run_id: str, values: dict[str, Any]) -> None:
    with session(write=True) as s:
        result = s.exec(update(Run).where(Run.id == run_id).values(**values))
        if result.rowcount == 0:
            raise NotFound(f"no run {run_id!r}")


def _run_filters(
    status: str | Iterable[str] | None,
    definition: str | None,
    text: str | None,
    since: datetime | None,
    until: datetime | None,
) -> list:
    where: list = []
    if status:
        statuses = [status] if isinstance(status, str) else list(status)
        where.append(Run.status == statuses[0] if len(statuses) == 1 else Run.status.in_(statuses))
    if definition:
        where.append(Run.definition_name == definition)
    if text:
        columns = (Run.id, Run.definition_name, Run.started_by, Run.outcome, Run.prefect_flow_run_id)
        where.append(or_(*(c.icontains(text, autoescape=True) for c in columns)))
    if since:
        where.append(Run.created_at >= since)
    if until:
        where.append(Run.created_at < until)
    return where


def list_runs(
    status: str | Iterable[str] | None = None,
    definition: str | None = None,
    text: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    limit: int = 50,
    offset: int = 0,
) -> tuple[list[Run], int]:
    """One page of runs, newest first, and the number of runs matching the filters.

    ``status`` is one status or several; ``text`` is a case-insensitive substring of the run id,
    definition, starter, outcome or Prefect flow-run id; ``since``/``until`` bound ``created_at``
    (``until`` excluded). Status and definition filters are served by the
    ``(status|definition_name, created_at)`` indexes, so pages stay fast on large stores.
    """
    where = _run_filters(status, definition, text, since, until)
    with session() as s:
        total = s.exec(select(func.count()).select_from(Run).where(*where)).one()
        q = select(Run).where(*where).order_by(Run.created_at.desc(), Run.id.desc())
        rows = s.exec(q.limit(max(0, limit)).offset(max(0, offset))).all()
    return list(rows), int(total)


def definition_names_with_runs() -> list[str]:
    """Distinct definition names that have runs (for the dashboard's filter)."""
    with session() as s:
        return list(s.exec(select(Run.definition_name).distinct().order_by(Run.definition_name)).all())


def mark_stale_runs_crashed(
    now: datetime | None = None, heartbeat_timeout: timedelta | float = timedelta(minutes=5)
) -> list[Run]:
    """Mark ``running`` runs whose process is gone as ``crashed``; return them.

    A run is stale when its last heartbeat (or start, if it never beat) is older than
    ``heartbeat_timeout`` (a timedelta or seconds), or when it runs on this host under a pid
    that no longer exists. The reason goes into ``error``; the run's visits still ``running``
    become ``failed``, so a resume restarts them.
    """
    now = now or utcnow()
    timeout = heartbeat_timeout if isinstance(heartbeat_timeout, timedelta) else timedelta(seconds=heartbeat_timeout)
    with session() as s:
        running = s.exec(select(Run).where(Run.status == "running")).all()
    crashed = []
    for run in running:
        reason = _stale_reason(run, now, timeout)
        if reason and (row := _crash(run.id, reason, now)) is not None:
            crashed.append(row)
    return crashed


def _stale_reason(run: Run, now: datetime, timeout: timedelta) -> str | None:
    if run.pid and run.host == socket.gethostname() and not _pid_alive(run.pid):
        return f"crashed: process {run.pid} on {run.host} is gone"
    last = run.heartbeat_at or run.started_at or run.created_at
    if last < now - timeout:
        return f"crashed: no heartbeat since {last.isoformat()} (timeout {timeout.total_seconds():g}s)"
    return None


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by someone else
    except OSError:
        return False
    return True


def _crash(run_id: str, reason: str, now: datetime) -> Run | None:
    with session(write=True) as s:
        run = s.get(Run, run_id, with_for_update=True)
        if run is None or run.status != "running":
            return None  # it moved on while we looked
        run.status, run.error, run.ended_at = "crashed", reason, now
        s.add(run)
        s.exec(
            update(NodeVisit)
            .where(NodeVisit.run_id == run_id, NodeVisit.status == "running")
            .values(status="failed", error=reason, ended_at=now)
        )
    return run


# --- node visits -------------------------------------------------------------------------------


def next_visit_sequence(run_id: str) -> int:
    """The sequence number the next visit of ``run_id`` gets (1 for the first)."""
    with session() as s:
        return _next_sequence(s, run_id)


def _next_sequence(s, run_id: str) -> int:
    current = s.exec(select(func.max(NodeVisit.sequence)).where(NodeVisit.run_id == run_id)).one()
    return (current or 0) + 1


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
    row = dict(id=new_id(), run_id=run_id, sequence=sequence, node_id=node_id, node_type=node_type,
               item_key=item_key, parent_visit_id=parent_visit_id, attempt=attempt, status="running",
               input=input, prefect_task_run_id=prefect_task_run_id, started_at=now or utcnow())
    try:
        if sequence is not None:
            # The hot path (the engine allocated the sequence): one Core INSERT on a plain connection.
            with connection(write=True) as conn:
                conn.execute(insert(_VISITS), row)
        else:
            with session(write=True) as s:
                _lock_run(s, run_id)
                row["sequence"] = _next_sequence(s, run_id)
                s.exec(insert(_VISITS).values(**row))
    except IntegrityError as exc:
        if "foreign key" in str(exc.orig).lower() and get_run(run_id) is None:
            raise NotFound(f"no run {run_id!r}") from exc
        raise
    return NodeVisit.model_construct(**row)


def close_visit(
    visit_id: str,
    run_id: str,
    *,
    started_at: datetime,
    status: str,
    output: Any = None,
    context_diff: list[dict] | None = None,
    error: str | None = None,
    next_node: str | None = None,
    context: dict | None = None,
) -> str | None:
    """The engine's hot path: close a visit and (when ``context`` is given) store the run's new
    context in ONE transaction; returns the run's status as of that transaction, which is how
    the engine sees a cancel request before its next node without another query."""
    _check(status, VISIT_STATUSES, "visit status")
    now = utcnow()
    with connection(write=True) as conn:
        conn.execute(update(_VISITS).where(_VISITS.c.id == visit_id).values(
            status=status, output=output, error=error, next_node=next_node, context_diff=context_diff or [],
            ended_at=now, duration_ms=max(0, _ms(started_at, now)),
        ))
        if context is not None:
            return conn.execute(update(_RUNS).where(_RUNS.c.id == run_id).values(context=context, heartbeat_at=now)
                                .returning(_RUNS.c.status)).scalar()
        return conn.execute(select(_RUNS.c.status).where(_RUNS.c.id == run_id)).scalar()


def _lock_run(s, run_id: str) -> Run:
    """Lock the run row for the transaction, so per-run counters (visit sequence, artifact
    version) are taken one writer at a time. ``FOR NO KEY UPDATE`` on PostgreSQL, which still
    lets other transactions insert rows that reference the run; a no-op on SQLite, where the
    write transaction already excludes other writers."""
    return _require(s, Run, run_id, lock={"key_share": True})


def finish_visit(
    visit_id: str,
    status: str = "completed",
    *,
    output: Any = None,
    context_diff: list[dict] | None = None,
    error: str | None = None,
    next_node: str | None = None,
    now: datetime | None = None,
) -> NodeVisit:
    """Close a visit: status, output, context diff, error, next node, end time and duration."""
    _check(status, VISIT_STATUSES, "visit status")
    now = now or utcnow()
    with session(write=True) as s:
        return _close_visit(s, visit_id, status, output, context_diff, error, next_node, now)


def _close_visit(s, visit_id, status, output, context_diff, error, next_node, now) -> NodeVisit:
    visit = _require(s, NodeVisit, visit_id, lock=True)
    visit.status, visit.output, visit.error, visit.next_node = status, output, error, next_node
    visit.context_diff = context_diff or []
    visit.ended_at, visit.duration_ms = now, max(0, _ms(visit.started_at, now))
    s.add(visit)
    return visit


def checkpoint_visit(
    visit_id: str,
    run_id: str,
    *,
    status: str = "completed",
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
    _check(status, VISIT_STATUSES, "visit status")
    now = now or utcnow()
    with session(write=True) as s:
        visit = _close_visit(s, visit_id, status, output, context_diff, error, next_node, now)
        if visit.run_id != run_id:
            raise StoreError(f"visit {visit_id} belongs to run {visit.run_id}, not {run_id}")
        s.exec(update(Run).where(Run.id == run_id).values(context=context, heartbeat_at=now))
    return visit


def get_visit(visit_id: str) -> NodeVisit | None:
    return _get(NodeVisit, visit_id)


def visits_for_run(run_id: str) -> list[NodeVisit]:
    """All visits of a run in the order they started."""
    with session() as s:
        return list(s.exec(select(NodeVisit).where(NodeVisit.run_id == run_id).order_by(NodeVisit.sequence)).all())


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


# --- artifacts ---------------------------------------------------------------------------------


def record_artifact(
    run_id: str,
    key: str,
    type: str,
    content: Any,
    *,
    visit_id: str | None = None,
    description: str | None = None,
) -> Artifact:
    """Store an artifact; recording the same ``key`` again in a run adds version 2, 3, …"""
    _check(type, ARTIFACT_TYPES, "artifact type")
    with session(write=True) as s:
        _lock_run(s, run_id)
        latest = s.exec(
            select(func.max(Artifact.version)).where(Artifact.run_id == run_id, Artifact.key == key)
        ).one()
        row = Artifact(run_id=run_id, visit_id=visit_id, key=key, type=type, content=content,
                       version=(latest or 0) + 1, description=description)
        s.add(row)
    return row


def artifacts_for_run(run_id: str, *, key: str | None = None, latest_only: bool = False) -> list[Artifact]:
    """A run's artifacts ordered by key then version (only the newest version per key if asked)."""
    with session() as s:
        q = select(Artifact).where(Artifact.run_id == run_id)
        if key is not None:
            q = q.where(Artifact.key == key)
        rows = list(s.exec(q.order_by(Artifact.key, Artifact.version)).all())
    if latest_only:
        rows = list({row.key: row for row in rows}.values())
    return rows


def get_artifact(artifact_id: str) -> Artifact | None:
    return _get(Artifact, artifact_id)


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
) -> LlmCall:
    """Store one model call and add its cost and tokens to the run's totals (same transaction)."""
    values = dict(
        id=new_id(), run_id=run_id, visit_id=visit_id, model=model, messages=messages, response=response, tools=tools,
        tokens_in=tokens_in, tokens_out=tokens_out, cost_usd=cost_usd, latency_ms=latency_ms, attempt=attempt,
        repair=repair, cassette_key=cassette_key, offline=offline, error=error, created_at=utcnow(),
    )
    # Core statements on a plain connection: this is on the path of every model call.
    with connection(write=True) as conn:
        conn.execute(insert(_LLM_CALLS), values)
        conn.execute(
            update(_RUNS).where(_RUNS.c.id == run_id)
            .values(cost_usd=_RUNS.c.cost_usd + cost_usd, tokens=_RUNS.c.tokens + tokens_in + tokens_out)
        )
    return LlmCall.model_construct(**values)


def llm_calls_for_run(run_id: str, *, visit_id: str | None = None) -> list[LlmCall]:
    return _calls(LlmCall, run_id, visit_id)


def earlier_llm_answer(visit_id: str, cassette_key: str) -> tuple[str, str, bool, Any] | None:
    """The answer an earlier, unfinished visit of the same node (same item and attempt) got to the
    request with ``cassette_key`` — the n-th such answer when this visit already has n — as
    (call id, model, offline, response); None when there is none.

    On the path of every model call of a resumed run, and nearly always empty: one query finds
    the earlier unfinished visits first."""
    from sqlalchemy import and_
    from sqlalchemy.orm import aliased

    visits, calls = NodeVisit.__table__, LlmCall.__table__
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
) -> ToolCall:
    return _add(ToolCall(run_id=run_id, visit_id=visit_id, tool=tool, args=args, result=result, status=status,
                         latency_ms=latency_ms, error=error))


def tool_calls_for_run(run_id: str, *, visit_id: str | None = None) -> list[ToolCall]:
    return _calls(ToolCall, run_id, visit_id)


def _calls(model: type[M], run_id: str, visit_id: str | None) -> list[M]:
    with session() as s:
        q = select(model).where(model.run_id == run_id)
        if visit_id is not None:
            q = q.where(model.visit_id == visit_id)
        # created_at can tie within a clock tick; rowid-like id order is random, so add it only
        # to make the order stable.
        return list(s.exec(q.order_by(model.created_at, model.id)).all())


# --- human tasks -------------------------------------------------------------------------------


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
    return task


def set_task_flow_run(task_id: str, prefect_flow_run_id: str) -> None:
    """Record which Prefect flow run waits for the task's answer (known once its subflow starts)."""
    with session(write=True) as s:
        s.exec(update(HumanTask).where(HumanTask.id == task_id).values(prefect_flow_run_id=prefect_flow_run_id))


def open_tasks_count(run_id: str) -> int:
    """How many of the run's tasks still wait for an answer."""
    with session() as s:
        return len(s.exec(select(HumanTask.id).where(HumanTask.run_id == run_id,
                                                     HumanTask.status.in_(TASK_OPEN))).all())


def get_task(task_id: str) -> HumanTask | None:
    return _get(HumanTask, task_id)


def task_by_pause_key(pause_key: str) -> HumanTask | None:
    with session() as s:
        return s.exec(select(HumanTask).where(HumanTask.pause_key == pause_key)).first()


TASK_FILTERS: dict[str, tuple[str, ...] | None] = {
    "open": TASK_OPEN,
    "all": None,
    **{status: (status,) for status in TASK_STATUSES},
}


def list_tasks(
    status: str = "open",
    *,
    visible_to: str | None = None,
    run_id: str | None = None,
    limit: int = 50,
    offset: int = 0,
) -> tuple[list[HumanTask], int]:
    """One page of tasks, newest first, and the total matching.

    ``status`` is ``open`` (pending + in progress), ``all`` or a task status. With
    ``visible_to``, only tasks that user may see: assigned to them, to one of their groups, or to
    nobody (admins see everything).
    """
    if status not in TASK_FILTERS:
        raise StoreError(f"task filter {status!r} is not one of: {', '.join(TASK_FILTERS)}")
    where: list = []
    if (statuses := TASK_FILTERS[status]) is not None:
        where.append(HumanTask.status.in_(statuses))
    if run_id is not None:
        where.append(HumanTask.run_id == run_id)
    with session() as s:
        if visible_to is not None:
            where.extend(_visibility(s, visible_to))
        total = s.exec(select(func.count()).select_from(HumanTask).where(*where)).one()
        q = select(HumanTask).where(*where).order_by(HumanTask.created_at.desc(), HumanTask.id.desc())
        rows = s.exec(q.limit(max(0, limit)).offset(max(0, offset))).all()
    return list(rows), int(total)


def _visibility(s, user_name: str) -> list:
    user = s.get(User, user_name)
    if user is not None and user.is_admin:
        return []
    groups = s.exec(select(Membership.group_name).where(Membership.user_name == user_name)).all()
    assignees = [user_name, *(f"group:{g}" for g in groups)]
    return [or_(HumanTask.assignee.is_(None), HumanTask.assignee.in_(assignees))]


def tasks_for_run(run_id: str) -> list[HumanTask]:
    with session() as s:
        q = select(HumanTask).where(HumanTask.run_id == run_id).order_by(HumanTask.created_at, HumanTask.id)
        return list(s.exec(q).all())


def claim_task(task_id: str, user: str, *, now: datetime | None = None) -> HumanTask:
    """``user`` takes an open task (pending → in_progress). Taking it again is a no-op; taking
    a task someone else holds, or a closed one, raises :class:`TaskConflict`.

    Whether ``user`` may act on the task at all is decided by the caller (flows.humans).
    """
    now = now or utcnow()
    with session(write=True) as s:
        task = _require(s, HumanTask, task_id, lock=True)
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
    task_id: str, answer: dict, *, answered_by: str, answered_via: str, now: datetime | None = None
) -> HumanTask:
    """Record a validated answer (the caller validated it against the fields) and complete the
    task. Raises :class:`TaskConflict` when the task is no longer open (answered elsewhere)."""
    _check(answered_via, TASK_CHANNELS, "answer channel")
    now = now or utcnow()
    with session(write=True) as s:
        task = _require(s, HumanTask, task_id, lock=True)
        if task.status not in TASK_OPEN:
            raise TaskConflict(f"task {task_id} is already {task.status}")
        task.status, task.answer, task.answered_by, task.answered_via, task.answered_at = (
            "completed", answer, answered_by, answered_via, now)
        s.add(task)
        s.add(TaskEvent(task_id=task_id, actor=answered_by, action="answered",
                        detail={"via": answered_via}, at=now))
    return task


def close_task(task_id: str, status: str, *, actor: str | None = None, reason: str | None = None) -> HumanTask:
    """Close an open task as ``cancelled`` or ``expired`` (with an audit event)."""
    if status not in ("cancelled", "expired"):
        raise StoreError(f"close_task sets cancelled or expired, not {status!r}")
    with session(write=True) as s:
        task = _require(s, HumanTask, task_id, lock=True)
        if task.status not in TASK_OPEN:
            raise TaskConflict(f"task {task_id} is already {task.status}")
        task.status = status
        s.add(task)
        s.add(TaskEvent(task_id=task_id, actor=actor, action=status, detail={"reason": reason}))
    return task


def record_task_event(task_id: str, action: str, *, actor: str | None = None, detail: Any = None) -> TaskEvent:
    """Add an audit event, e.g. ``refused`` with the validation errors of a wrong answer."""
    _check(action, TASK_ACTIONS, "task action")
    return _add(TaskEvent(task_id=task_id, actor=actor, action=action, detail=detail))


def task_events(task_id: str) -> list[TaskEvent]:
    with session() as s:
        q = select(TaskEvent).where(TaskEvent.task_id == task_id).order_by(TaskEvent.at, TaskEvent.id)
        return list(s.exec(q).all())


# --- users and groups --------------------------------------------------------------------------


def upsert_user(
    name: str, *, display_name: str | None = None, password_hash: str | None = None, is_admin: bool | None = None
) -> User:
    """Create a user or update the given attributes (None leaves an attribute as it is)."""
    with session(write=True) as s:
        user = s.get(User, name, with_for_update=True) or User(name=name)
        if display_name is not None:
            user.display_name = display_name
        if password_hash is not None:
            user.password_hash = password_hash
        if is_admin is not None:
            user.is_admin = is_admin
        s.add(user)
    return user


def get_user(name: str) -> User | None:
    return _get(User, name)


def list_users() -> list[User]:
    with session() as s:
        return list(s.exec(select(User).order_by(User.name)).all())


def add_to_group(user: str, group: str) -> None:
    """Make ``user`` (who must exist) a member of ``group`` (created when new)."""
    with session(write=True) as s:
        _require(s, User, user)
        if s.get(Group, group) is None:
            s.add(Group(name=group))
        if s.get(Membership, (user, group)) is None:
            s.add(Membership(user_name=user, group_name=group))


def remove_from_group(user: str, group: str) -> None:
    with session(write=True) as s:
        row = s.get(Membership, (user, group))
        if row is not None:
            s.delete(row)


def groups_of(user: str) -> list[str]:
    with session() as s:
        q = select(Membership.group_name).where(Membership.user_name == user).order_by(Membership.group_name)
        return list(s.exec(q).all())


def members_of(group: str) -> list[str]:
    with session() as s:
        q = select(Membership.user_name).where(Membership.group_name == group).order_by(Membership.user_name)
        return list(s.exec(q).all())


# --- secrets (ciphertext only: encryption lives with the caller) --------------------------------


def put_secret(name: str, ciphertext: bytes, key_id: str) -> Secret:
    """Store or replace a sealed secret. Never pass plaintext: this column is not encrypted here."""
    now = utcnow()
    with session(write=True) as s:
        row = s.get(Secret, name, with_for_update=True) or Secret(name=name, ciphertext=b"", key_id="", created_at=now)
        row.ciphertext, row.key_id, row.updated_at = bytes(ciphertext), key_id, now
        s.add(row)
    return row


def get_secret(name: str) -> Secret | None:
    return _get(Secret, name)


def list_secrets() -> list[Secret]:
    """All sealed secrets (names, key ids, dates; the ciphertext too, for key rotation)."""
    with session() as s:
        return list(s.exec(select(Secret).order_by(Secret.name)).all())


def delete_secret(name: str) -> bool:
    with session(write=True) as s:
        row = s.get(Secret, name)
        if row is None:
            return False
        s.delete(row)
    return True


# --- trigger state -----------------------------------------------------------------------------

_TRIGGER_UPDATABLE = frozenset({"kind", "paused", "last_run_id", "last_run_at", "next_run_at", "created_by"})


def upsert_trigger_state(definition_name: str, trigger_index: int, **fields: Any) -> TriggerState:
    """Create or update the state of trigger ``trigger_index`` of ``definition_name``
    (``kind, paused, last_run_id, last_run_at, next_run_at, created_by``)."""
    unknown = set(fields) - _TRIGGER_UPDATABLE
    if unknown:
        raise StoreError(f"trigger state has no field {', '.join(sorted(unknown))}")
    with session(write=True) as s:
        q = select(TriggerState).where(
            TriggerState.definition_name == definition_name, TriggerState.trigger_index == trigger_index
        )
        row = s.exec(q.with_for_update()).first()
        if row is None:
            if "kind" not in fields:
                raise StoreError("a new trigger state needs its kind")
            row = TriggerState(definition_name=definition_name, trigger_index=trigger_index, kind=fields["kind"])
        for key, value in fields.items():
            setattr(row, key, value)
        s.add(row)
    return row


def list_trigger_states(definition_name: str | None = None) -> list[TriggerState]:
    with session() as s:
        q = select(TriggerState)
        if definition_name is not None:
            q = q.where(TriggerState.definition_name == definition_name)
        return list(s.exec(q.order_by(TriggerState.definition_name, TriggerState.trigger_index)).all())


# --- export ------------------------------------------------------------------------------------

EXPORT_FORMAT = "ergon.run/1"


def export_run(run_id: str) -> dict:
    """Everything about one run as a JSON-able dict: the run, the definition snapshot it ran,
    visits, artifacts, LLM calls, tool calls, and human tasks with their audit events."""
    run = require_run(run_id)
    tasks = []
    for task in tasks_for_run(run_id):
        tasks.append({**_dump(task), "events": [_dump(e) for e in task_events(task.id)]})
    return {
        "format": EXPORT_FORMAT,
        "run": _dump(run),
        "definition": get_snapshot(run.content_hash) if run.content_hash else None,
        "visits": [_dump(v) for v in visits_for_run(run_id)],
        "artifacts": [_dump(a) for a in artifacts_for_run(run_id)],
        "llm_calls": [_dump(c) for c in llm_calls_for_run(run_id)],
        "tool_calls": [_dump(c) for c in tool_calls_for_run(run_id)],
        "tasks": tasks,
        "children": [c.id for c in child_runs(run_id)],
    }


# --- published versions with their source (issue 7: flows.versions) ---------------------------


def publish_version(
    name: str, kind: str, *, content: Any, source: str | None, source_file: str | None,
    comment: str | None = None, published_by: str | None = None,
) -> tuple[DefinitionVersion, bool]:
    """Publish ``content`` (and the exact ``source`` text it was parsed from) as the next version
    of ``name``, creating the definition row if needed and making the content its draft.

    Returns ``(version, created)``: when the latest version already has this content nothing is
    written and that version comes back with ``created=False``. The check and the insert share
    one write transaction, so two concurrent publishes of the same text make one version.
    """
    digest = content_hash(content)
    now = utcnow()
    with session(write=True) as s:
        definition = s.get(Definition, name, with_for_update=True)
        if definition is None:
            definition = Definition(name=name, kind=kind, created_at=now)
        q = select(DefinitionVersion).where(DefinitionVersion.definition_name == name)
        latest = s.exec(q.order_by(DefinitionVersion.version.desc()).limit(1)).first()
        if latest is not None and latest.content_hash == digest:
            return latest, False
        definition.kind, definition.draft_content, definition.draft_hash, definition.updated_at = kind, content, digest, now
        s.add(definition)
        if s.get(DefinitionSnapshot, digest) is None:
            s.add(DefinitionSnapshot(hash=digest, content=content))
        row = DefinitionVersion(
            definition_name=name, version=(latest.version if latest else 0) + 1, content=content,
            content_hash=digest, source=source, source_file=source_file, comment=comment,
            published_by=published_by, created_at=now,
        )
        s.add(row)
    return row, True
