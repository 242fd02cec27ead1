"""One-time answer codes: how a person proves who answers a task through Prefect's own form.

Prefect keeps what its form sends — in its database and its write-ahead log, in backups, in
Prefect Cloud — and Ergon cannot erase copies it does not own: it rewrites the stored input
without the proof (:mod:`flows.prefect.pause`), but the server's files may still hold the
original. So a long-lived credential never travels through Prefect. A task whose answer must
prove who gives it (an assignee or four-eyes: :func:`flows.humans.needs_proof`) asks, in Prefect's
form, a *code*:

* ``ergon tasks code TASK_ID``, acting as the person (their token, ``--as``, or the OS user),
  checks that they may answer the task now (:func:`flows.humans.answer_code`) and prints a code for that task and that person:
  ``code_`` and 22 URL-safe characters (128 random bits), valid :data:`CODE_MINUTES` minutes,
  once. The store keeps its SHA-256, never the code.
* The run that reads the form hashes what was typed at once; :func:`redeem` finds the code by
  that hash, checks it was given for this task, is unused and unexpired, and spends it — its
  first presentation spends it, whether the answer is then accepted or not. What Prefect keeps
  is a spent code.
* A personal token typed into the form is refused **and revoked**: it now sits in Prefect's
  database, where Ergon cannot remove it. The refusal says so, and how to get a code.

Nothing here logs, prints or records a code; :func:`redeem` says only whose it was.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import UTC, timedelta

from flows.errors import IdentityError
from flows.store import answer_codes as code_store
from flows.store import people as people_store
from flows.store import tokens as token_store
from flows.store.models import AnswerCode, utcnow
from flows.tokens import hash_token

#: How long a code may wait to be used.
CODE_MINUTES = 15
PREFIX = "code_"


class CodeRefused(IdentityError):
    """A code that proves nothing: unknown, for another task, used, expired — or a personal token."""


@dataclass(frozen=True)
class Issued:
    """A new code: ``code`` is the secret (shown once), ``row`` what the store keeps."""

    code: str
    row: AnswerCode


#: The SHA-256 (hex) the store keeps of a code: the personal tokens' own hash, so the form's
#: reader hashes what was typed once and :func:`redeem` recognises a token typed there.
hash_code = hash_token


def issue(task_id: str, user_name: str) -> Issued:
    """A code for ``user_name`` to answer ``task_id`` in Prefect's form. Whether they may is
    :func:`flows.humans.answer_code`'s to decide first (the same rules as an answer)."""
    code = PREFIX + secrets.token_urlsafe(16)
    row = code_store.add_code(hash_code(code), task_id, user_name, utcnow() + timedelta(minutes=CODE_MINUTES))
    return Issued(code, row)


def redeem(code_sha256: str, task_id: str) -> str:
    """Who the code whose SHA-256 is ``code_sha256`` proves, for ``task_id``; spends it. Raises
    :class:`CodeRefused` saying why it proves nothing (and revokes a personal token found there)."""
    row = code_store.get_code(code_sha256)
    if row is None:
        token = token_store.token_by_hash(code_sha256)
        if token is not None:
            token_store.revoke_token(token.id, by="ergon")
            raise CodeRefused(f"that was {token.user_name}'s personal token {token.id}, typed into Prefect's form, "
                              "which keeps what it is sent: Ergon revoked it (`ergon tokens create` makes a new one). "
                              f"Answer with a one-time code: ergon tasks code {task_id}")
        raise CodeRefused(f"the code is not one this store gave (mistyped, or from another store): "
                          f"ergon tasks code {task_id} gives one")
    if row.task_id != task_id:
        raise CodeRefused(f"the code was given for task {row.task_id}, not this one: ergon tasks code {task_id}")
    expires_at = row.expires_at if row.expires_at.tzinfo else row.expires_at.replace(tzinfo=UTC)
    if row.used_at is not None or not code_store.spend(code_sha256):
        raise CodeRefused(f"the code was used already (a code answers once): ergon tasks code {task_id} gives another")
    if expires_at <= utcnow():
        raise CodeRefused(f"the code expired at {expires_at.isoformat(timespec='seconds')} ({CODE_MINUTES} minutes): "
                          f"ergon tasks code {task_id} gives another")
    if people_store.get_user(row.user_name) is None:
        raise CodeRefused(f"the code belongs to {row.user_name}, who is no longer a user")
    return row.user_name
