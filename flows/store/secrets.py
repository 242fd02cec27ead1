"""Sealed secrets: ciphertext only, encryption lives with the caller (:mod:`flows.secrets`).

Nothing here encrypts or decrypts: the ``ciphertext`` column holds the envelope exactly as the
caller sealed it, and ``key_id`` names the key that sealed it (for rotation).

A secret's value is at most :data:`MAX_VALUE_BYTES` (64 KiB): secrets are keys, tokens and
passwords, and every run that uses one reads it whole. The store refuses a larger sealed value
(:class:`~flows.store.errors.TooLarge`) whoever sends it; ``ergon secrets set`` stops reading its
input past the bound.
"""

from __future__ import annotations

from sqlmodel import col, select

from flows.store._common import get_row
from flows.store.db import session
from flows.store.errors import TooLarge
from flows.store.models import Secret, utcnow


#: The largest value a secret may have, in bytes (UTF-8).
MAX_VALUE_BYTES = 64 * 1024
#: What sealing adds to a value at most (envelope header, key id, nonce, tag), with room to spare.
_ENVELOPE_BYTES = 1024


def put_secret(name: str, ciphertext: bytes, key_id: str) -> Secret:
    """Store or replace a sealed secret. Never pass plaintext: this column is not encrypted here."""
    if len(ciphertext) > MAX_VALUE_BYTES + _ENVELOPE_BYTES:
        raise TooLarge(f"secret `{name}` is too large: a secret's value is at most {MAX_VALUE_BYTES // 1024} KiB "
                       f"({MAX_VALUE_BYTES} bytes)")
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


def sealed_by_key() -> dict[str, list[str]]:
    """Key id → the names of the secrets it sealed (to tell whether a key can still be missed)."""
    with session() as s:
        found: dict[str, list[str]] = {}
        for name, key_id in s.exec(select(Secret.name, Secret.key_id).order_by(col(Secret.name))).all():
            found.setdefault(key_id, []).append(name)
        return found
