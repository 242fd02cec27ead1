"""Trigger states: the runtime state of each trigger of a definition (paused, last and next run).

The triggers themselves live in the definition's YAML; a state row is keyed by (definition,
trigger index), unique in the database, and created by its first update (which needs the kind).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlmodel import col, select

from flows.store.db import session
from flows.store.errors import StoreError
from flows.store.models import TriggerState

_TRIGGER_UPDATABLE = frozenset({"kind", "paused", "last_run_id", "last_run_at", "next_run_at", "created_by"})


def upsert_trigger_state(definition_name: str, trigger_index: int, **fields: Any) -> TriggerState:
    """Create or update the state of trigger ``trigger_index`` of ``definition_name``
    (``kind, paused, last_run_id, last_run_at, next_run_at, created_by``).

    Two first updates at once (webhooks arriving together, on PostgreSQL, where transactions run
    side by side) both find no row, and the second insert breaks the unique key: it is then an
    update of the row the first one made."""
    unknown = set(fields) - _TRIGGER_UPDATABLE
    if unknown:
        raise StoreError(f"trigger state has no field {', '.join(sorted(unknown))}")
    try:
        return _upsert(definition_name, trigger_index, fields)
    except IntegrityError:
        return _upsert(definition_name, trigger_index, fields)


def _upsert(definition_name: str, trigger_index: int, fields: dict[str, Any]) -> TriggerState:
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
        return list(s.exec(q.order_by(col(TriggerState.definition_name), col(TriggerState.trigger_index))).all())
