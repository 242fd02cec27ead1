"""Users, groups, admins and their passwords.

The store (:mod:`flows.store.people`) keeps users, memberships and a ``password_hash`` per user;
this module decides what goes into that hash and how a login is checked. Who may *act* on a
human task is :mod:`flows.humans`' business, not this one's.

Passwords are hashed with scrypt from the standard library (no extra dependency, memory-hard,
so a stolen store does not give cheap offline guesses). The encoded form carries its own
parameters, ``scrypt$n$r$p$salt_b64$hash_b64``, so raising the cost later still verifies the hashes
stored earlier.
"""

from __future__ import annotations

from flows.errors import ErgonError

import base64
import hashlib
import hmac
import os
from collections.abc import Iterable

from flows.store import people as people_store
from flows.store.errors import NotFound
from flows.store.models import User

__all__ = ["PasswordError", "SCRYPT_N", "SCRYPT_P", "SCRYPT_R", "add_user", "authenticate", "hash_password",
           "set_password", "verify_password"]

SCRYPT_N = 2**14
SCRYPT_R = 8
SCRYPT_P = 1
SALT_BYTES = 16
KEY_BYTES = 32
# Refuse parameters from a stored hash that would make one verification take gigabytes of memory
# (a corrupted or planted row must not be a denial of service of the login page).
_MAX_N = 2**20
_MAX_RP = 64


class PasswordError(ErgonError, ValueError):
    """A password that cannot be set (empty)."""


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _scrypt(password: str, salt: bytes, n: int, r: int, p: int, dklen: int) -> bytes:
    # maxmem: scrypt needs 128·r·n bytes (+ a little); OpenSSL's default cap is 32 MiB.
    return hashlib.scrypt(password.encode("utf-8"), salt=salt, n=n, r=r, p=p, dklen=dklen,
                          maxmem=128 * r * n + 2**20)


def hash_password(password: str, *, salt: bytes | None = None) -> str:
    """The encoded scrypt hash of ``password`` with a fresh random salt (``salt`` is for tests)."""
    if not password:
        raise PasswordError("a password may not be empty")
    salt = salt if salt is not None else os.urandom(SALT_BYTES)
    digest = _scrypt(password, salt, SCRYPT_N, SCRYPT_R, SCRYPT_P, KEY_BYTES)
    return f"scrypt${SCRYPT_N}${SCRYPT_R}${SCRYPT_P}${_b64(salt)}${_b64(digest)}"


def verify_password(password: str, encoded: str | None) -> bool:
    """Whether ``password`` matches ``encoded``; any malformed hash is simply a mismatch."""
    if not password or not encoded:
        return False
    try:
        scheme, n_s, r_s, p_s, salt_s, hash_s = encoded.split("$")
        n, r, p = int(n_s), int(r_s), int(p_s)
        salt, expected = base64.b64decode(salt_s, validate=True), base64.b64decode(hash_s, validate=True)
    except ValueError:
        return False
    if scheme != "scrypt" or not (1 < n <= _MAX_N) or n & (n - 1) or not (0 < r <= _MAX_RP) \
            or not (0 < p <= _MAX_RP) or not expected:
        return False
    try:
        actual = _scrypt(password, salt, n, r, p, len(expected))
    except (ValueError, MemoryError):
        return False
    return hmac.compare_digest(actual, expected)  # constant time: no timing hint on how much matched


# A hash to verify against when the user does not exist, so that "no such user" and "wrong
# password" take the same time and a login form does not reveal which names exist.
_DUMMY_HASH: str | None = None


def _dummy_hash() -> str:
    global _DUMMY_HASH
    if _DUMMY_HASH is None:
        _DUMMY_HASH = hash_password(os.urandom(16).hex())
    return _DUMMY_HASH


def add_user(
    name: str,
    groups: Iterable[str] = (),
    admin: bool | None = None,
    password: str | None = None,
    *,
    display_name: str | None = None,
) -> User:
    """Create ``name`` (or update it): add it to ``groups``, set admin when ``admin`` is not None,
    set the password when one is given. Existing memberships are kept: adding is additive."""
    name = name.strip()
    if not name or name.startswith("group:"):
        raise ValueError(f"invalid user name {name!r}")  # "group:x" would read as a group assignee
    password_hash = hash_password(password) if password is not None else None
    people_store.upsert_user(name, display_name=display_name, password_hash=password_hash, is_admin=admin)
    for group in groups:
        group = group.strip()
        if group.startswith("group:"):
            group = group[len("group:"):]
        if not group:
            raise ValueError("a group name may not be empty")
        people_store.add_to_group(name, group)
    user = people_store.get_user(name)
    assert user is not None
    return user


def set_password(name: str, password: str) -> User:
    """Set the password of an existing user."""
    if people_store.get_user(name) is None:
        raise NotFound(f"no user {name!r}")
    return people_store.upsert_user(name, password_hash=hash_password(password))


def authenticate(name: str, password: str) -> User | None:
    """The user when ``password`` is theirs; None otherwise (unknown user, no password set, wrong
    password) — one answer for all three, in about the same time."""
    user = people_store.get_user(name)
    if user is None or not user.password_hash:
        verify_password(password or "x", _dummy_hash())
        return None
    return user if verify_password(password, user.password_hash) else None
