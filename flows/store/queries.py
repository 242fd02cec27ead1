"""Read-only queries of the dashboard: light rows, filtered and paginated in the database.

:mod:`flows.store.repo` returns whole model rows, which is right for the engine and the CLI.
The dashboard lists many rows at once (a page of runs, the 2,000 visits of a long run, every
artifact), so these functions select only the columns a table shows — never a run's context, a
visit's input/output or an artifact's content, which can each be 64 KB — and return plain dicts.
Filters reuse :func:`flows.store.repo._run_filters`, so ``ergon runs list`` and the Runs page
agree on what a filter means, and the ``(status|definition_name, created_at)`` indexes serve
both.

Nothing here writes.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from sqlmodel import func, select

from flows.store.db import session
from flows.store.models import Artifact, LlmCall, NodeVisit, Run, ToolCall
from flows.store.repo import _run_filters

RUN_COLUMNS = (
    Run.id, Run.definition_name, Run.definition_version, Run.status, Run.outcome, Run.trigger, Run.started_by,
    Run.created_at, Run.started_at, Run.ended_at, Run.cost_usd, Run.tokens, Run.parent_run_id, Run.error,
)
VISIT_COLUMNS = (
    NodeVisit.id, NodeVisit.sequence, NodeVisit.node_id, NodeVisit.node_type, NodeVisit.item_key,
    NodeVisit.parent_visit_id, NodeVisit.attempt, NodeVisit.status, NodeVisit.started_at, NodeVisit.ended_at,
    NodeVisit.duration_ms, NodeVisit.next_node, NodeVisit.error,
)
ARTIFACT_COLUMNS = (
    Artifact.id, Artifact.run_id, Artifact.visit_id, Artifact.key, Artifact.type, Artifact.version,
    Artifact.description, Artifact.created_at,
)


def _rows(result: Iterable[Any]) -> list[dict[str, Any]]:
    return [dict(row._mapping) for row in result]


def runs_page(
    status: str | Iterable[str] | None = None,
    definition: str | None = None,
    text: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    *,
    limit: int = 50,
    offset: int = 0,
) -> tuple[list[dict[str, Any]], int]:
    """One page of runs (newest first) as dicts of :data:`RUN_COLUMNS`, and how many match.

    The filters are those of :func:`flows.store.repo.list_runs`. ``limit``/``offset`` paginate in
    SQL, so the cost of a page is one COUNT over the filter's index plus ``limit`` rows.
    """
    where = _run_filters(status, definition, text, since, until)
    with session() as s:
        total = s.exec(select(func.count()).select_from(Run).where(*where)).one()
        q = select(*RUN_COLUMNS).where(*where).order_by(Run.created_at.desc(), Run.id.desc())
        rows = _rows(s.exec(q.limit(max(0, limit)).offset(max(0, offset))))
    return rows, int(total)


def run_summaries(run_ids: Iterable[str]) -> dict[str, dict[str, Any]]:
    """The :data:`RUN_COLUMNS` of the given runs, by id (to refresh live rows of a page)."""
    ids = list(dict.fromkeys(run_ids))
    if not ids:
        return {}
    with session() as s:
        return {row["id"]: row for row in _rows(s.exec(select(*RUN_COLUMNS).where(Run.id.in_(ids))))}


def visit_rows(run_id: str) -> list[dict[str, Any]]:
    """Every visit of a run in sequence order, without input, output and context diff."""
    with session() as s:
        q = select(*VISIT_COLUMNS).where(NodeVisit.run_id == run_id).order_by(NodeVisit.sequence)
        return _rows(s.exec(q))


def node_visits(run_id: str, node_id: str, *, limit: int = 20, offset: int = 0) -> tuple[list[NodeVisit], int]:
    """Whole visits of one node of a run (newest first, foreach items included), and how many."""
    where = (NodeVisit.run_id == run_id, NodeVisit.node_id == node_id)
    with session() as s:
        total = s.exec(select(func.count()).select_from(NodeVisit).where(*where)).one()
        q = select(NodeVisit).where(*where).order_by(NodeVisit.sequence.desc())
        rows = list(s.exec(q.limit(max(0, limit)).offset(max(0, offset))).all())
    return rows, int(total)


def child_visits(run_id: str, parent_visit_id: str) -> list[NodeVisit]:
    """The item visits of a foreach/branch visit, in sequence order."""
    with session() as s:
        q = select(NodeVisit).where(NodeVisit.run_id == run_id, NodeVisit.parent_visit_id == parent_visit_id)
        return list(s.exec(q.order_by(NodeVisit.sequence)).all())


def calls_for_visits(run_id: str, visit_ids: Iterable[str]) -> tuple[dict[str, list[LlmCall]], dict[str, list[ToolCall]]]:
    """LLM calls and tool calls of some visits of a run, grouped by visit id, oldest first."""
    ids = list(dict.fromkeys(visit_ids))
    llm: dict[str, list[LlmCall]] = {}
    tools: dict[str, list[ToolCall]] = {}
    if not ids:
        return llm, tools
    with session() as s:
        for model, into in ((LlmCall, llm), (ToolCall, tools)):
            q = select(model).where(model.run_id == run_id, model.visit_id.in_(ids))
            for row in s.exec(q.order_by(model.created_at, model.id)).all():
                into.setdefault(row.visit_id, []).append(row)
    return llm, tools


def artifacts_page(
    *,
    type: str | None = None,
    key: str | None = None,
    definition: str | None = None,
    run_id: str | None = None,
    limit: int = 50,
    offset: int = 0,
) -> tuple[list[dict[str, Any]], int]:
    """Artifacts (every version), newest first, with their run's definition, status and start,
    and how many match. ``key`` is a case-insensitive substring."""
    where: list = []
    if type:
        where.append(Artifact.type == type)
    if key:
        where.append(Artifact.key.icontains(key, autoescape=True))
    if definition:
        where.append(Run.definition_name == definition)
    if run_id:
        where.append(Artifact.run_id == run_id)
    joined = (Run.definition_name, Run.status.label("run_status"), Run.created_at.label("run_created_at"))
    with session() as s:
        total = s.exec(select(func.count()).select_from(Artifact).join(Run, Run.id == Artifact.run_id).where(*where)).one()
        q = (select(*ARTIFACT_COLUMNS, *joined).join(Run, Run.id == Artifact.run_id).where(*where)
             .order_by(Artifact.created_at.desc(), Artifact.id.desc()))
        rows = _rows(s.exec(q.limit(max(0, limit)).offset(max(0, offset))))
    return rows, int(total)


def artifact_keys() -> list[str]:
    """Distinct artifact keys, sorted (the compare view picks one)."""
    with session() as s:
        return list(s.exec(select(Artifact.key).distinct().order_by(Artifact.key)).all())


def runs_with_artifact(key: str, *, limit: int = 200) -> list[dict[str, Any]]:
    """Runs that recorded artifact ``key``, newest first: run id, definition, run start, and the
    number of versions the run has of it."""
    with session() as s:
        q = (select(Artifact.run_id, Run.definition_name, Run.created_at, func.max(Artifact.version).label("versions"))
             .join(Run, Run.id == Artifact.run_id).where(Artifact.key == key)
             .group_by(Artifact.run_id, Run.definition_name, Run.created_at)
             .order_by(Run.created_at.desc()).limit(limit))
        return _rows(s.exec(q))


def latest_artifact(run_id: str, key: str) -> Artifact | None:
    """The newest version of artifact ``key`` in a run."""
    with session() as s:
        q = select(Artifact).where(Artifact.run_id == run_id, Artifact.key == key).order_by(Artifact.version.desc())
        return s.exec(q.limit(1)).first()
