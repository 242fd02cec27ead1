"""Dashboard sign-ins: one row per signed-in browser, until it expires or is revoked.

What the browser holds, and how it is signed, is ``ui/session.py``'s business; the store only
answers whether a sign-in is still good.
"""

from __future__ import annotations

from datetime import datetime

from sqlmodel import col, update

from flows.store._common import get_row
from flows.store.db import session
from flows.store.models import SignIn, utcnow


def create_sign_in(user_name: str, expires_at: datetime) -> SignIn:
    with session(write=True) as s:
        row = SignIn(user_name=user_name, expires_at=expires_at)
        s.add(row)
    return row


def active_user(sign_in_id: str, *, now: datetime | None = None) -> str | None:
    """The user of a sign-in that is neither expired nor revoked, else None."""
    row = get_row(SignIn, sign_in_id)
    now = now or utcnow()
    if row is None or row.revoked_at is not None or row.expires_at <= now:
        return None
    return row.user_name


def revoke_sign_in(sign_in_id: str) -> None:
    with session(write=True) as s:
        s.exec(update(SignIn).where(col(SignIn.id) == sign_in_id, col(SignIn.revoked_at).is_(None))
               .values(revoked_at=utcnow()))
