"""Runs as conversations: the questions the catalog's conversation tools ask of the store.

``search_conversations`` pages through runs filtered by status, creation time, who started them
and their definition, each with its model-call count; ``analyze_conversation`` reads one run's
model calls in order with the node each was made for. Read-only: nothing here writes.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlmodel import col, func, select

from flows.store._common import mappings, page
from flows.store.db import session
from flows.store.models import LlmCall, NodeVisit, Run

#: The columns a conversation summary shows (never inputs, context or outputs).
SUMMARY_COLUMNS = (
    Run.id, Run.definition_name, Run.status, Run.trigger, Run.started_by, Run.parent_run_id, Run.created_at,
    Run.started_at, Run.ended_at, Run.outcome, Run.error, Run.error_kind, Run.tokens, Run.cost_usd,
)


def search_runs(*, status: str | None = None, since: datetime | None = None, until: datetime | None = None,
                started_by: str | None = None, definition: str | None = None, limit: int = 20,
                offset: int = 0) -> tuple[list[dict[str, Any]], int]:
    """Runs matching every filter given, newest first (``until`` excluded), with ``llm_calls``
    (their number of model calls), and how many match."""
    where: list[Any] = []
    if status:
        where.append(col(Run.status) == status)
    if since:
        where.append(col(Run.created_at) >= since)
    if until:
        where.append(col(Run.created_at) < until)
    if started_by:
        where.append(col(Run.started_by) == started_by)
    if definition:
        where.append(col(Run.definition_name) == definition)
    calls = (select(func.count()).select_from(LlmCall).where(col(LlmCall.run_id) == col(Run.id))
             .correlate(Run).scalar_subquery().label("llm_calls"))
    with session() as s:
        total = int(s.exec(select(func.count()).select_from(Run).where(*where)).one())
        q = (select(*SUMMARY_COLUMNS, calls).where(*where)  # type: ignore[call-overload]
             .order_by(col(Run.created_at).desc(), col(Run.id).desc()))
        return mappings(s.exec(page(q, limit, offset))), total


def run_summary(run_id: str) -> dict[str, Any] | None:
    """One run's summary columns, or None when there is no such run."""
    with session() as s:
        rows = mappings(s.exec(select(*SUMMARY_COLUMNS).where(col(Run.id) == run_id)))  # type: ignore[call-overload]
    return rows[0] if rows else None


def model_calls(run_id: str) -> list[dict[str, Any]]:
    """A run's model calls in the order they were made: node id (None for a workstream's call),
    workstream id, model, messages, response, error and time."""
    with session() as s:
        q = (select(LlmCall.visit_id, LlmCall.workstream_id, LlmCall.model, LlmCall.messages, LlmCall.response,
                    LlmCall.error, LlmCall.created_at, NodeVisit.node_id)  # type: ignore[call-overload]
             .outerjoin(NodeVisit, col(NodeVisit.id) == col(LlmCall.visit_id))
             .where(col(LlmCall.run_id) == run_id).order_by(col(LlmCall.created_at), col(LlmCall.id)))
        return mappings(s.exec(q))
