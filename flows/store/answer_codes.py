"""One-time answer codes: rows keyed by the SHA-256 of the code (the code itself is never stored).

Making and checking a code is :mod:`flows.answer_codes`' business; this module stores the rows,
finds one by its hash and spends one — once: two readers presenting the same code race on one
``UPDATE … WHERE used_at IS NULL``, and only one of them spends it.
"""

from __future__ import annotations

from datetime import datetime

from sqlmodel import col, update

from flows.store._common import get_row
from flows.store.db import session
from flows.store.models import AnswerCode, utcnow


def add_code(code_sha256: str, task_id: str, user_name: str, expires_at: datetime) -> AnswerCode:
    with session(write=True) as s:
        row = AnswerCode(code_sha256=code_sha256, task_id=task_id, user_name=user_name, expires_at=expires_at)
        s.add(row)
    return row


def get_code(code_sha256: str) -> AnswerCode | None:
    return get_row(AnswerCode, code_sha256)


def spend(code_sha256: str, *, now: datetime | None = None) -> bool:
    """Mark the code used; False when it was used already (or does not exist)."""
    with session(write=True) as s:
        result = s.exec(update(AnswerCode).where(col(AnswerCode.code_sha256) == code_sha256,
                                                 col(AnswerCode.used_at).is_(None))
                        .values(used_at=now or utcnow()))
        return bool(result.rowcount)
