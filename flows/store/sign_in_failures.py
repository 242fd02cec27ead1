"""Refused dashboard sign-ins, kept a while so that guessing can be throttled by the user name as
typed and by the client's address, in every dashboard process that shares the store.

An attempt is written *before* its password is checked (:func:`admit`), in the same write
transaction that counts the recent ones: simultaneous guesses then count each other instead of
all reading the same count and all going through. A sign-in that succeeds takes that row back,
together with the earlier failures of the same name from the same address — the person's own
typos (:func:`forget`); every other row is left to age out, so signing in does not hand someone
guessing the same name from elsewhere a fresh allowance.

What counts as too many is the caller's policy (``ui/throttle.py``): :func:`admit` counts and
asks it. Rows older than the oldest moment the policy counts from are of no further use; the
process that writes an attempt deletes them, at most once every :data:`PURGE_EVERY`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy import delete
from sqlmodel import Session, col, func, select

from flows.store.db import session
from flows.store.models import SignInFailure, utcnow

R = TypeVar("R")

#: seconds between two purges of aged rows by one process
PURGE_EVERY = 60.0
_last_purge = 0.0


@dataclass(frozen=True)
class Recent:
    """The failures counted for a user name or an address since a moment."""

    count: int
    latest: datetime | None


def _recent(s: Session, where: Any, since: datetime) -> Recent:
    count, latest = s.exec(select(func.count(), func.max(SignInFailure.at))
                           .where(where, col(SignInFailure.at) > since)).one()
    return Recent(int(count or 0), latest)


def admit(user_name: str, address: str, *, since: datetime, refuse: Callable[[Recent, Recent], R | None],
          now: datetime | None = None) -> R | None:
    """Count the failures of ``user_name`` and of ``address`` since ``since`` and ask ``refuse``
    (by name, by address): what it returns when the attempt is refused; otherwise None, and the
    attempt is recorded as a failure until :func:`forget` takes it back."""
    global _last_purge
    with session(write=True) as s:
        if s.get_bind().dialect.name == "postgresql":
            # SQLite's write transaction already excludes other writers; here, lock out other
            # attempts between this count and this insert (reads go on)
            s.connection().exec_driver_sql("LOCK TABLE sign_in_failures IN SHARE ROW EXCLUSIVE MODE")
        refusal = refuse(_recent(s, col(SignInFailure.user_name) == user_name, since),
                         _recent(s, col(SignInFailure.address) == address, since))
        if refusal is None:
            s.add(SignInFailure(user_name=user_name, address=address, at=now or utcnow()))
        if time.monotonic() - _last_purge >= PURGE_EVERY:
            s.exec(delete(SignInFailure).where(col(SignInFailure.at) <= since))
            _last_purge = time.monotonic()
    return refusal


def forget(user_name: str, address: str) -> None:
    """A sign-in of ``user_name`` from ``address`` succeeded: its failures from there are gone."""
    with session(write=True) as s:
        s.exec(delete(SignInFailure).where(col(SignInFailure.user_name) == user_name,
                                           col(SignInFailure.address) == address))


def failures(user_name: str | None = None, address: str | None = None) -> int:
    """How many failures the store keeps for a name, an address, or (neither given) in all."""
    with session() as s:
        q = select(func.count()).select_from(SignInFailure)
        if user_name is not None:
            q = q.where(col(SignInFailure.user_name) == user_name)
        if address is not None:
            q = q.where(col(SignInFailure.address) == address)
        return int(s.exec(q).one())
