"""Ergon's encrypted secrets: API keys and tokens that definitions name as ``secret:NAME``; and
the resolution of every secret reference (:mod:`compiler.secret_references`).

Values are sealed with AES-256-GCM (:mod:`flows.secrets.envelope`, bound to the secret's name)
under keys from the environment or a private key file (:mod:`flows.secrets.keys`); the store
only ever sees the envelope (:func:`flows.store.secrets.put_secret`). A value is opened at the
moment it is used — an environment's ``api_key``, a tool server's header — and is never
printed, logged, written to a run record or put into a prompt.

Public API (other modules call these):

* :func:`reveal` ``(name) -> str`` — the plaintext, or :class:`SecretNotFound`;
* :func:`resolve_reference` ``(value) -> str`` — ``secret:NAME`` / ``env:VAR`` /
  ``prefect-secret:NAME`` / ``prefect-var:NAME`` / a literal. The two Prefect kinds resolve
  through the port :mod:`flows.secret_resolvers`, which :mod:`flows.prefect.secrets` fills when
  :mod:`flows.prefect` is imported (every process that runs nodes imports it): this package
  never imports Prefect;
* :func:`set_secret`, :func:`delete_secret`, :func:`list_secrets`, :func:`rotate` for the CLI.

Whatever a reference resolves to is remembered for redaction (:mod:`flows.secrets.redaction`),
whichever kind it is.

Errors never contain a value or a key: a wrong or missing key is a loud
:class:`SecretDecryptError` / :class:`~flows.secrets.keys.SecretKeyError` naming the secret and
the key id, never a garbage string.
"""

from __future__ import annotations

from flows.errors import ErgonError

import os
import re
from dataclasses import dataclass
from datetime import datetime

from compiler import secret_references
from flows import secret_resolvers
from flows.secrets import envelope, redaction
from flows.secrets.keys import KeyRing, SecretKeyError, add_key_to_file, load_keyring

__all__ = [
    "ReferenceNotFound",
    "ReferenceNotSet",
    "SecretDecryptError",
    "SecretError",
    "SecretInfo",
    "SecretKeyError",
    "SecretNotFound",
    "delete_secret",
    "list_secrets",
    "resolve_reference",
    "reveal",
    "rotate",
    "set_secret",
    "validate_name",
]

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,127}$")


class SecretError(ErgonError):
    """Base of the errors of this package (except :class:`SecretNotFound`, a LookupError)."""


class SecretNotFound(SecretError, LookupError):
    """No secret of that name is stored."""

    def __init__(self, name: str) -> None:
        super().__init__(f"secret `{name}` is not set; store it with `ergon secrets set {name}` "
                         f"(the value is read from standard input)")
        self.name = name


class ReferenceNotSet(SecretError, LookupError):
    """An ``env:VAR`` reference whose variable is unset or empty."""


class ReferenceNotFound(SecretError, LookupError):
    """A reference to a value kept outside Ergon (a Prefect Secret block or Variable) that does
    not exist there; the message names it and the command that makes it."""


class SecretDecryptError(SecretError):
    """A stored secret does not open with the configured keys (wrong key, altered or moved row)."""


@dataclass(frozen=True)
class SecretInfo:
    """What may be shown about a secret: never its value."""

    name: str
    key_id: str
    created_at: datetime
    updated_at: datetime


def validate_name(name: str) -> str:
    if not _NAME.match(name or ""):
        raise ValueError(f"secret name `{name}` is not valid: use letters, digits, `_`, `.`, `-`, "
                         f"starting with a letter or `_` (e.g. OPENAI_API_KEY)")
    return name


def _store():
    from flows.store import db
    from flows.store import secrets as secret_store

    db.init_db()
    return secret_store


def _key_id(row) -> str:
    try:
        return envelope.key_id_of(row.ciphertext)
    except envelope.EnvelopeError as exc:
        raise SecretDecryptError(f"secret `{row.name}` is not readable ({exc}); "
                                 f"set it again with `ergon secrets set {row.name}`") from None


def _open(row, ring: KeyRing) -> str:
    stored_kid = _key_id(row)
    key = ring.key(stored_kid)
    if key is None:
        raise SecretDecryptError(
            f"secret `{row.name}` was sealed with key `{stored_kid}`, which is not among the configured keys "
            f"({', '.join(ring.keys)} from {ring.source}); configure that key again (keep old keys after the "
            f"active one until `ergon secrets rotate` has re-sealed everything)")
    try:
        return envelope.open_(row.ciphertext, name=row.name, key=key)
    except envelope.EnvelopeError:
        raise SecretDecryptError(
            f"secret `{row.name}` does not decrypt with key `{stored_kid}` from {ring.source}: that key is not the "
            f"one that sealed it, or the stored value was altered or copied from another secret; "
            f"set it again with `ergon secrets set {row.name}`") from None


def reveal(name: str) -> str:
    """The plaintext of secret ``name``.

    Raises :class:`SecretNotFound` (with the ``ergon secrets set NAME`` hint) when it is not
    stored, :class:`SecretKeyError` when no key is configured, :class:`SecretDecryptError` when
    the configured keys do not open it.
    """
    row = _store().get_secret(name)
    if row is None:
        raise SecretNotFound(name)
    return redaction.remember(_open(row, load_keyring()))


def resolve_reference(value: str) -> str:
    """``secret:NAME`` → the secret, ``env:VAR`` → ``$VAR``, ``prefect-secret:NAME`` /
    ``prefect-var:NAME`` → the Prefect Secret block's / Variable's value (through
    :mod:`flows.secret_resolvers`), anything else → itself.

    A missing secret raises :class:`SecretNotFound`, an unset variable :class:`ReferenceNotSet`, a
    missing Prefect block or variable :class:`ReferenceNotFound` (LookupErrors whose message names
    the reference and how to make it, never a value); a malformed reference, or one whose
    resolver this process has not registered, :class:`SecretError`.
    """
    ref = secret_references.parse(value)
    if ref is None:
        return value
    wrong = secret_references.problem(ref)
    if wrong is not None:
        raise SecretError(f"{wrong.message} ({wrong.hint})")
    if ref.kind == "secret":
        return reveal(ref.name)
    if ref.kind == "env":
        resolved = os.environ.get(ref.name)
        if not resolved:
            raise ReferenceNotSet(f"`{value}` needs the environment variable {ref.name}, which is not set")
        return redaction.remember(resolved)
    resolve = secret_resolvers.resolver(ref.kind)
    if resolve is None:
        raise SecretError(f"`{ref}` names a {secret_references.KINDS[ref.kind]}, and this process has not "
                          f"loaded Ergon's Prefect integration (`flows.prefect`) that reads it")
    return redaction.remember(resolve(ref.name))


def set_secret(name: str, value: str) -> SecretInfo:
    """Seal ``value`` under the active key and store it as ``name`` (replacing any older value).
    Creates the default key file when no key is configured (see :mod:`flows.secrets.keys`)."""
    validate_name(name)
    if not value:
        raise ValueError(f"secret `{name}`: the value is empty")
    ring = load_keyring(create=True)
    sealed = envelope.seal(value, name=name, key_id=ring.active, key=ring.keys[ring.active])
    return _info(_store().put_secret(name, sealed, ring.active))


def delete_secret(name: str) -> bool:
    """Remove secret ``name``; False when there was none."""
    return _store().delete_secret(name)


def list_secrets() -> list[SecretInfo]:
    """Names, key ids and dates of the stored secrets (never values)."""
    return [_info(row) for row in _store().list_secrets()]


def rotate(*, new_key: bool = False) -> tuple[str, list[str]]:
    """Re-seal every secret sealed under an older key with the active key.

    ``new_key`` first adds a fresh key at the front of the key file (it becomes the active one).
    Returns (active key id, names re-sealed). Every secret is opened before anything is written,
    so a secret whose key is missing stops the rotation with nothing changed.
    """
    ring = load_keyring()
    if new_key:
        add_key_to_file(ring)
        ring = load_keyring()
    secret_store = _store()
    stale = [row for row in secret_store.list_secrets() if _key_id(row) != ring.active]
    opened = [(row.name, _open(row, ring)) for row in stale]
    key = ring.keys[ring.active]
    for name, value in opened:
        secret_store.put_secret(name, envelope.seal(value, name=name, key_id=ring.active, key=key), ring.active)
    return ring.active, [name for name, _ in opened]


def _info(row) -> SecretInfo:
    return SecretInfo(name=row.name, key_id=row.key_id, created_at=row.created_at, updated_at=row.updated_at)
