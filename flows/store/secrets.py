"""Sealed secrets: ciphertext only, encryption lives with the caller (:mod:`flows.secrets`).

Nothing here encrypts or decrypts: the ``ciphertext`` column holds the envelope exactly as the
caller sealed it, and ``key_id`` names the key that sealed it (for rotation).
"""

from __future__ import annotations

from sqlmodel import col, select

from flows.store._common import get_row
from flows.store.db import session
from flows.store.models import Secret, utcnow


def put_secret(name: str, ciphertext: bytes, key_id: str) -> Secret:
    """Store or replace a sealed secret. Never pass plaintext: this column is not encrypted here."""
    now = utcnow()
    with session(write=True) as s:
        row = s.get(Secret, name, with_for_update=True) or Secret(name=name, ciphertext=b"", key_id="", created_at=now)
        row.ciphertext, row.key_id, row.updated_at = bytes(ciphertext), key_id, now
        s.add(row)
    return row


def get_secret(name: str) -> Secret | None:
    return get_row(Secret, name)


def list_secrets() -> list[Secret]:
    """All sealed secrets (names, key ids, dates; the ciphertext too, for key rotation)."""
    with session() as s:
        return list(s.exec(select(Secret).order_by(col(Secret.name))).all())


def delete_secret(name: str) -> bool:
    with session(write=True) as s:
        row = s.get(Secret, name)
        if row is None:
            return False
        s.delete(row)
    return True
