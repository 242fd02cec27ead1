"""Artifacts: the versioned outputs a run records, and the dashboard's questions about them.

Recording the same key again in a run adds version 2, 3, …; the version is taken under a lock on
the run row (:func:`flows.store._common.lock_run`), so concurrent branches never collide. The
dashboard's listings select only :data:`ARTIFACT_COLUMNS` (never the content, which can be
64 KB) and return plain dicts. Nothing but :func:`record_artifact` writes.
"""

from __future__ import annotations

from typing import Any

from sqlmodel import col, func, select

from flows.store._common import check, get_row, lock_run, mappings, page
from flows.store.db import session
from flows.store.models import ARTIFACT_TYPES, Artifact, ArtifactType, Run

#: The columns of the dashboard's artifact rows: never the content.
ARTIFACT_COLUMNS = (
    Artifact.id, Artifact.run_id, Artifact.visit_id, Artifact.key, Artifact.type, Artifact.version,
    Artifact.description, Artifact.created_at,
)


def record_artifact(
    run_id: str,
    key: str,
    type: ArtifactType,
    content: Any,
    *,
    visit_id: str | None = None,
    description: str | None = None,
) -> Artifact:
    """Store an artifact; recording the same ``key`` again in a run adds version 2, 3, …"""
    check(type, ARTIFACT_TYPES, "artifact type")
    with session(write=True) as s:
        lock_run(s, run_id)
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
        rows = list(s.exec(q.order_by(col(Artifact.key), col(Artifact.version))).all())
    if latest_only:
        rows = list({row.key: row for row in rows}.values())
    return rows


def get_artifact(artifact_id: str) -> Artifact | None:
    return get_row(Artifact, artifact_id)


def artifacts_page(
    *,
    type: ArtifactType | None = None,
    key: str | None = None,
    definition: str | None = None,
    run_id: str | None = None,
    limit: int = 50,
    offset: int = 0,
) -> tuple[list[dict[str, Any]], int]:
    """Artifacts (every version), newest first, with their run's definition, status and start,
    and how many match. ``key`` is a case-insensitive substring."""
    where: list[Any] = []
    if type:
        where.append(col(Artifact.type) == type)
    if key:
        where.append(col(Artifact.key).icontains(key, autoescape=True))
    if definition:
        where.append(col(Run.definition_name) == definition)
    if run_id:
        where.append(col(Artifact.run_id) == run_id)
    on_run = col(Run.id) == col(Artifact.run_id)
    joined: tuple[Any, ...] = (Run.definition_name, col(Run.status).label("run_status"), col(Run.created_at).label("run_created_at"))
    with session() as s:
        total = s.exec(select(func.count()).select_from(Artifact).join(Run, on_run).where(*where)).one()
        q = (select(*ARTIFACT_COLUMNS, *joined).join(Run, on_run).where(*where)  # type: ignore[call-overload]
             .order_by(col(Artifact.created_at).desc(), col(Artifact.id).desc()))
        rows = mappings(s.exec(page(q, limit, offset)))
    return rows, int(total)


def artifact_keys() -> list[str]:
    """Distinct artifact keys, sorted (the compare view picks one)."""
    with session() as s:
        return list(s.exec(select(Artifact.key).distinct().order_by(col(Artifact.key))).all())


def runs_with_artifact(key: str, *, limit: int = 200) -> list[dict[str, Any]]:
    """Runs that recorded artifact ``key``, newest first: run id, definition, run start, and the
    number of versions the run has of it."""
    with session() as s:
        q = (select(Artifact.run_id, Run.definition_name, Run.created_at, func.max(Artifact.version).label("versions"))
             .join(Run, col(Run.id) == col(Artifact.run_id)).where(Artifact.key == key)
             .group_by(col(Artifact.run_id), col(Run.definition_name), col(Run.created_at))
             .order_by(col(Run.created_at).desc()).limit(limit))
        return mappings(s.exec(q))
