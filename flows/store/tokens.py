"""Personal API tokens: rows keyed by the SHA-256 of the token (the token itself is never stored).

Making, hashing and checking a token is :mod:`flows.tokens`' business; this module stores the
rows, finds one by its hash, and marks one used or revoked.
"""

from __future__ import annotations

from datetime import datetime

from sqlmodel import col, select, update

from flows.store._common import get_row
from flows.store.db import session
from flows.store.models import ApiToken, utcnow


def add_token(user_name: str, token_hash: str, *, label: str | None, expires_at: datetime | None) -> ApiToken:
    with session(write=True) as s:
        row = ApiToken(user_name=user_name, token_hash=token_hash, label=label, expires_at=expires_at)
        s.add(row)
    return row


def token_by_hash(token_hash: str) -> ApiToken | None:
    with session() as s:
        return s.exec(select(ApiToken).where(ApiToken.token_hash == token_hash)).first()


def get_token(token_id: str) -> ApiToken | None:
    return get_row(ApiToken, token_id)


def list_tokens(user_name: str | None = None) -> list[ApiToken]:
    """Tokens, newest first: ``user_name``'s, or everyone's."""
    with session() as s:
        q = select(ApiToken)
        if user_name is not None:
            q = q.where(ApiToken.user_name == user_name)
        return list(s.exec(q.order_by(col(ApiToken.created_at).desc(), col(ApiToken.id))).all())


def mark_used(token_id: str, *, now: datetime | None = None) -> None:
    with session(write=True) as s:
        s.exec(update(ApiToken).where(col(ApiToken.id) == token_id).values(last_used_at=now or utcnow()))


def revoke_token(token_id: str, *, by: str, now: datetime | None = None) -> bool:
    """Revoke a token; False when it was revoked already (or does not exist)."""
    with session(write=True) as s:
        result = s.exec(update(ApiToken).where(col(ApiToken.id) == token_id, col(ApiToken.revoked_at).is_(None))
                        .values(revoked_at=now or utcnow(), revoked_by=by))
        return bool(result.rowcount)
