"""Workstreams: the sub-agents an agent visit delegates to (:class:`~flows.store.models.Workstream`).

The run's owner writes them (:mod:`flows.runtime.workstreams`): a row when a child is launched,
updates as its state, phase and iteration change, and its end. The dashboard reads a visit's
children and a child's own calls; budgets add a visit's children's spend to the visit's own.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlmodel import col, func, select, update

from flows.store._common import add_row, check, get_row
from flows.store.db import session
from flows.store.models import (
    WORKSTREAM_PHASES,
    WORKSTREAM_STATUSES,
    LlmCall,
    NodeVisit,
    ToolCall,
    Workstream,
    utcnow,
)

__all__ = ["calls", "create", "earlier", "for_run", "for_visit", "get", "reparent", "spend", "update_workstream"]


def create(**fields: Any) -> Workstream:
    """Store a launched workstream (status ``running``, phase ``planning`` unless given)."""
    check(fields.get("status"), WORKSTREAM_STATUSES, "workstream status")
    now = utcnow()
    return add_row(Workstream(**{"created_at": now, "updated_at": now, **fields}))


def update_workstream(row_id: str, **fields: Any) -> None:
    """Change some columns of a workstream (its ``updated_at`` too)."""
    check(fields.get("status"), WORKSTREAM_STATUSES, "workstream status")
    check(fields.get("phase"), WORKSTREAM_PHASES, "workstream phase")
    with session(write=True) as s:
        s.exec(update(Workstream).where(col(Workstream.id) == row_id).values(**fields, updated_at=utcnow()))


def get(row_id: str) -> Workstream | None:
    return get_row(Workstream, row_id)


def for_visit(visit_id: str) -> list[Workstream]:
    """The workstreams a visit launched (or adopted on resume), oldest first."""
    with session() as s:
        q = select(Workstream).where(Workstream.parent_visit_id == visit_id)
        return list(s.exec(q.order_by(col(Workstream.created_at), col(Workstream.id))).all())


def for_run(run_id: str) -> list[Workstream]:
    with session() as s:
        q = select(Workstream).where(Workstream.run_id == run_id)
        return list(s.exec(q.order_by(col(Workstream.created_at), col(Workstream.id))).all())


def earlier(visit_id: str) -> list[Workstream]:
    """The workstreams of earlier, unfinished visits of the same node as ``visit_id`` (same run,
    item and attempt: the visits a resume redoes), the latest visit's first."""
    with session() as s:
        this = s.get(NodeVisit, visit_id)
        if this is None:
            return []
        q = (select(Workstream).join(NodeVisit, col(NodeVisit.id) == col(Workstream.parent_visit_id))
             .where(NodeVisit.run_id == this.run_id, NodeVisit.node_id == this.node_id, NodeVisit.attempt == this.attempt,
                    col(NodeVisit.status) != "completed", col(NodeVisit.sequence) < this.sequence,
                    col(NodeVisit.item_key).is_not_distinct_from(this.item_key))
             .order_by(col(NodeVisit.sequence).desc(), col(Workstream.created_at), col(Workstream.id)))
        return list(s.exec(q).all())


def reparent(row_id: str, visit_id: str) -> None:
    """Move a workstream to the visit that adopted it (a resumed visit taking a child that ended)."""
    update_workstream(row_id, parent_visit_id=visit_id)


def calls(workstream_id: str) -> tuple[list[LlmCall], list[ToolCall]]:
    """A workstream's model calls and tool calls, oldest first."""
    with session() as s:
        llm = s.exec(select(LlmCall).where(LlmCall.workstream_id == workstream_id)
                     .order_by(col(LlmCall.created_at), col(LlmCall.id))).all()
        tools = s.exec(select(ToolCall).where(ToolCall.workstream_id == workstream_id)
                       .order_by(col(ToolCall.created_at), col(ToolCall.id))).all()
        return list(llm), list(tools)


def spend(visit_ids: Iterable[str]) -> tuple[int, float]:
    """Tokens and cost of the model calls of the workstreams these visits launched."""
    ids = list(visit_ids)
    if not ids:
        return 0, 0.0
    with session() as s:
        launched = select(Workstream.id).where(col(Workstream.parent_visit_id).in_(ids))
        row = s.exec(select(func.coalesce(func.sum(LlmCall.tokens_in + LlmCall.tokens_out), 0),
                            func.coalesce(func.sum(LlmCall.cost_usd), 0.0))
                     .where(col(LlmCall.workstream_id).in_(launched))).one()
        return int(row[0] or 0), float(row[1] or 0.0)
