"""Helpers the store's entity modules share; private to :mod:`flows.store`.

Each helper that opens a session opens its own short transaction (:func:`flows.store.db.session`);
the ones that take a session ``s`` work inside the caller's.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy import Select
from sqlmodel import Session, SQLModel

from flows.store.db import session
from flows.store.errors import NotFound, StoreError
from flows.store.models import Run

M = TypeVar("M", bound=SQLModel)
Q = TypeVar("Q", bound="Select[Any]")


def check(value: str | None, allowed: Sequence[str], what: str) -> None:
    """Refuse a status or kind that is not one of ``allowed`` (None passes: "not given")."""
    if value is not None and value not in allowed:
        raise StoreError(f"{what} {value!r} is not one of: {', '.join(allowed)}")


def get_row(model: type[M], key: Any) -> M | None:
    with session() as s:
        return s.get(model, key)


def require_row(s: Session, model: type[M], key: Any, *, lock: bool | dict = False) -> M:
    row = s.get(model, key, with_for_update=lock)
    if row is None:
        raise NotFound(f"no {model.__name__} {key!r}")
    return row


def add_row(row: M) -> M:
    with session(write=True) as s:
        s.add(row)
    return row


def lock_run(s: Session, run_id: str) -> Run:
    """Lock the run row for the transaction, so per-run counters (visit sequence, artifact
    version) are taken one writer at a time. ``FOR NO KEY UPDATE`` on PostgreSQL, which still
    lets other transactions insert rows that reference the run; a no-op on SQLite, where the
    write transaction already excludes other writers."""
    return require_row(s, Run, run_id, lock={"key_share": True})


def dump(row: SQLModel) -> dict:
    return row.model_dump(mode="json")


def ms_between(start: datetime, end: datetime) -> int:
    return int((end - start).total_seconds() * 1000)


def page(q: Q, limit: int, offset: int) -> Q:
    """``q`` limited to one page (a negative limit or offset counts as 0)."""
    return q.limit(max(0, limit)).offset(max(0, offset))


def mappings(result: Iterable[Any]) -> list[dict[str, Any]]:
    """Rows of a column select as plain dicts (the dashboard's light rows)."""
    return [dict(row._mapping) for row in result]
