"""Personal API tokens: a credential a person creates for themselves (``ergon tokens create``) and
gives instead of a password — to the CLI (``--token`` or ``ERGON_TOKEN``). Never to Prefect's
resume form, which keeps what it is sent: that form asks a one-time code (:mod:`flows.answer_codes`),
and a token found there is revoked.

* A token is ``ergon_`` followed by 43 URL-safe characters: 32 bytes from :func:`secrets.token_bytes`.
  It is shown once, when it is created, and never stored: the store keeps its SHA-256 (hex) and
  finds a token by that hash. A fast hash is enough here — unlike a password, a 256-bit random
  secret cannot be guessed from its hash — so checking a token costs microseconds, not scrypt's
  tens of milliseconds.
* A token has an optional label, an expiry (``--expires-days``, default
  :data:`DEFAULT_EXPIRES_DAYS`; 0 means never) and can be revoked by its owner or an admin. An
  expired or revoked token is refused, with the reason; so is a token whose owner is no longer
  in the store.
* A token cannot create tokens (:mod:`flows.identity` refuses it): a leaked token then cannot
  outlive its own expiry or revocation by minting a fresh one.

Nothing here logs, prints or records a token; :func:`verify` says only which row it matched.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import timedelta

from flows.errors import IdentityError
from flows.store import people as people_store
from flows.store import tokens as token_store
from flows.store.models import ApiToken, utcnow

__all__ = ["DEFAULT_EXPIRES_DAYS", "PREFIX", "Created", "TokenRefused", "create", "hash_token", "looks_like_token",
           "revoke", "verify", "verify_hash"]

PREFIX = "ergon_"
SECRET_BYTES = 32
DEFAULT_EXPIRES_DAYS = 90


class TokenRefused(IdentityError):
    """A token that does not prove anything: unknown, expired, revoked, or its user is gone."""


@dataclass(frozen=True)
class Created:
    """A new token: ``token`` is the secret (shown once), ``row`` what the store keeps."""

    token: str
    row: ApiToken


def hash_token(token: str) -> str:
    return hashlib.sha256(token.strip().encode("utf-8")).hexdigest()


def looks_like_token(text: str) -> bool:
    return text.strip().startswith(PREFIX) and len(text.strip()) > len(PREFIX) + 20


def create(user_name: str, *, label: str | None = None, expires_days: int | None = DEFAULT_EXPIRES_DAYS) -> Created:
    """A new token for ``user_name`` (who must exist); ``expires_days`` None or 0: never expires."""
    if people_store.get_user(user_name) is None:
        raise TokenRefused(f"no Ergon user {user_name!r}: an admin adds one with `ergon users add {user_name}`")
    if expires_days is not None and expires_days < 0:
        raise TokenRefused("--expires-days must be 0 (never) or more")
    token = PREFIX + secrets.token_urlsafe(SECRET_BYTES)
    expires_at = utcnow() + timedelta(days=expires_days) if expires_days else None
    row = token_store.add_token(user_name, hash_token(token), label=label, expires_at=expires_at)
    return Created(token, row)


def verify(token: str) -> ApiToken:
    """The stored row of a valid token (its ``user_name`` is who it proves); raises
    :class:`TokenRefused` saying why a token proves nothing. Marks the token used."""
    return verify_hash(hash_token(token) if token and token.strip() else "")


def verify_hash(token_hash: str) -> ApiToken:
    """:func:`verify` for a token already hashed by whoever received it (the Prefect form's
    reader hashes the token at once, so the token itself goes no further)."""
    row = token_store.token_by_hash(token_hash) if token_hash else None
    if row is None:
        raise TokenRefused("the token is not one of this store's (mistyped, or from another store)")
    now = utcnow()
    if row.revoked_at is not None:
        raise TokenRefused(f"the token {row.id} was revoked at {row.revoked_at.isoformat(timespec='seconds')}")
    if row.expires_at is not None and row.expires_at <= now:
        raise TokenRefused(f"the token {row.id} expired at {row.expires_at.isoformat(timespec='seconds')}: "
                           "create a new one with `ergon tokens create`")
    if people_store.get_user(row.user_name) is None:
        raise TokenRefused(f"the token {row.id} belongs to {row.user_name}, who is no longer a user")
    token_store.mark_used(row.id, now=now)
    return row


def revoke(token_id: str, *, by: str, is_admin: bool) -> ApiToken:
    """Revoke a token: its owner's own, or anyone's for an admin. Raises :class:`TokenRefused`."""
    row = token_store.get_token(token_id.strip())
    if row is None or (row.user_name != by and not is_admin):
        # someone else's token is "no token of yours": its existence is not revealed
        raise TokenRefused(f"no token {token_id} of {by}'s (`ergon tokens list` shows their ids)")
    if not token_store.revoke_token(row.id, by=by):
        raise TokenRefused(f"the token {row.id} was revoked already")
    return token_store.get_token(row.id) or row
