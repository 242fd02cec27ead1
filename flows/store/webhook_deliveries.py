"""Webhook deliveries: the signatures of accepted webhook requests, so a replay is refused by any
``ergon serve`` process on the store, before or after a restart.

A row is keyed by the SHA-256 (hex) of the request's signature header, never the header itself:
the table then holds nothing a sender could be impersonated with. :func:`remember` inserts the
row and lets the primary key decide: of two processes recording the same signature at once,
exactly one insert succeeds — on SQLite the write transaction serialises them, on PostgreSQL the
second insert waits for the first and fails on the key (or succeeds, if the first rolled back).

A row is only needed until its ``expires_at`` (the caller's replay window); rows past it are
deleted by :func:`remember` itself, at most once a minute per process, in a transaction of their
own so that a refused insert never undoes the clean-up.
"""

from __future__ import annotations

import re
import threading
import time
from datetime import datetime

from sqlalchemy.exc import IntegrityError
from sqlmodel import col, delete

from flows.store.db import session
from flows.store.errors import StoreError
from flows.store.models import WebhookDelivery, utcnow

#: seconds between two purges of expired rows by one process
PURGE_EVERY = 60.0
_SHA256_HEX = re.compile(r"[0-9a-f]{64}")
_purged_at = 0.0
_purge_lock = threading.Lock()


def remember(signature_hash: str, definition_name: str, expires_at: datetime) -> bool:
    """Record a delivery; False when ``signature_hash`` is already recorded (a replay)."""
    if not _SHA256_HEX.fullmatch(signature_hash):
        raise StoreError("a webhook delivery is keyed by the SHA-256 (64 lower-case hex digits) of its signature")
    _purge_when_due()
    try:
        with session(write=True) as s:
            s.add(WebhookDelivery(signature=signature_hash, definition_name=definition_name, expires_at=expires_at))
    except IntegrityError:
        return False
    return True


def forget(signature_hash: str) -> None:
    """Drop a delivery again: the request it recorded started nothing, and the sender may retry."""
    with session(write=True) as s:
        s.exec(delete(WebhookDelivery).where(col(WebhookDelivery.signature) == signature_hash))


def purge_expired(now: datetime | None = None) -> int:
    """Delete the deliveries whose ``expires_at`` has passed; how many were deleted."""
    with session(write=True) as s:
        result = s.exec(delete(WebhookDelivery).where(col(WebhookDelivery.expires_at) < (now or utcnow())))
    return result.rowcount or 0


def _purge_when_due() -> None:
    global _purged_at
    with _purge_lock:
        if time.monotonic() - _purged_at < PURGE_EVERY:
            return
        _purged_at = time.monotonic()
    purge_expired()
