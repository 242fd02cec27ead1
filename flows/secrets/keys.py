"""Where the keys that seal secrets come from: an environment variable or a 0600 key file.

In order of precedence:

1. ``ERGON_SECRET_KEYS="k2:<base64>,k1:<base64>"`` — the first key is the active one (new and
   rotated secrets are sealed with it); the others still open what they sealed. Suits
   deployments that inject keys from their own secret manager.
2. ``ERGON_SECRET_KEY_FILE=PATH`` — the same ``id:base64`` entries, one per line (``#`` comments
   allowed), first = active. The file must be readable by its owner only (mode 0600 or 0400):
   a key file others can read protects nothing, so Ergon refuses it rather than warn.
3. Neither: ``ERGON_HOME/secret.key``. It is **created on the first** ``ergon secrets set``
   (mode 0600, one random key ``k1``), so a single machine works with no set-up while the key
   stays outside the database — copying ``ergon.db`` alone does not reveal a secret. Back the
   file up: without it the secrets cannot be opened. Commands that only read secrets never
   create it; they say which key is missing instead.

Key files (this one, the rotation's rewrite, the signing keys of :func:`signing_key`) are written
whole or not at all (:func:`flows.files.write_atomic`): a full disk leaves no key file, or the
old one, never an empty one. An *empty* default key file — what an older Ergon left when the disk
filled while it made the first key — sealed nothing, so ``ergon secrets set`` replaces it with a
new key, but only while the store keeps no secret: a secret sealed before means the file once held
its key, and Ergon then says so and which secrets need it, rather than make a key that cannot open
them. A signing key file that holds no key is replaced (that only voids what it signed).

Keys are 32 random bytes (AES-256), base64 (standard or URL-safe alphabet). Error messages name
key ids and files, never key material.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from flows.errors import ErgonError
from flows.files import write_atomic
from flows.secrets.envelope import KEY_BYTES

ENV_KEYS = "ERGON_SECRET_KEYS"
ENV_KEY_FILE = "ERGON_SECRET_KEY_FILE"
DEFAULT_FILE_NAME = "secret.key"
_KEY_ID = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


class SecretKeyError(ErgonError, RuntimeError):
    """No usable key: none configured, a malformed key, or a key file others can read."""


@dataclass(frozen=True)
class KeyRing:
    """The configured keys by id, the active one first, and where they came from."""

    keys: dict[str, bytes]
    active: str
    source: str  # "ERGON_SECRET_KEYS", or the key file's path
    file: Path | None = None

    def key(self, key_id: str) -> bytes | None:
        return self.keys.get(key_id)


def generate_key() -> str:
    """A new random key, base64 (what goes after ``id:`` in the variable or the file)."""
    return base64.b64encode(os.urandom(KEY_BYTES)).decode("ascii")


def _decode(text: str, key_id: str, source: str) -> bytes:
    text = text.strip()
    for decoder in (base64.b64decode, base64.urlsafe_b64decode):
        try:
            raw = decoder(text + "=" * (-len(text) % 4))
        except (binascii.Error, ValueError):
            continue
        if len(raw) == KEY_BYTES:
            return raw
    raise SecretKeyError(f"{source}: key `{key_id}` is not {KEY_BYTES} bytes of base64 "
                         f"(make one with `ergon secrets generate-key`)")


def parse_keys(text: str, source: str) -> tuple[dict[str, bytes], str]:
    """``id:base64`` entries separated by commas or lines → (keys by id, active id)."""
    keys: dict[str, bytes] = {}
    entries = [e.strip() for line in text.splitlines() for e in line.split("#", 1)[0].split(",")]
    for entry in filter(None, entries):
        key_id, sep, value = entry.partition(":")
        key_id = key_id.strip()
        if not sep or not _KEY_ID.match(key_id):
            raise SecretKeyError(f"{source}: each key is `ID:BASE64` with an ID of letters, digits, `_.-` "
                                 f"(e.g. `k2:…,k1:…`); an entry does not look like that")
        if key_id in keys:
            raise SecretKeyError(f"{source}: key id `{key_id}` appears twice")
        keys[key_id] = _decode(value, key_id, source)
    if not keys:
        raise SecretKeyError(f"{source}: no key in it (expected `ID:BASE64`, first one active)")
    return keys, next(iter(keys))


def check_file_mode(path: Path) -> None:
    """Refuse a key file that anyone but its owner can read or write."""
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077:
        raise SecretKeyError(f"key file {path} has mode {mode:04o}: it must be readable by its owner only; "
                             f"run `chmod 600 {path}`")


def default_key_file() -> Path:
    from flows.settings import ergon_home

    return ergon_home() / DEFAULT_FILE_NAME


def _write_new_file(path: Path, content: str) -> None:
    """Create ``path`` whole, with mode 0600 from the start (never world-readable, even briefly);
    :class:`FileExistsError` when another process created it first."""
    write_atomic(path, content, mode=0o600, replace=False)


def _holds_no_key(text: str) -> bool:
    """Whether a key file's text has no entry at all (empty, blank, or comments only)."""
    return not any(line.split("#", 1)[0].strip() for line in text.splitlines())


@contextmanager
def _locked(path: Path) -> Iterator[bool]:
    """Hold an exclusive lock on the file at ``path`` (as it is now); yields whether ``path``
    still names that file once the lock is held — False when another process replaced it
    meanwhile, whose new file is then to be read rather than replaced again."""
    try:
        import fcntl
    except ImportError:  # not a POSIX system: no lock, the rare race stays
        yield True
        return
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        yield False
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            same = os.stat(path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        yield same
    finally:
        os.close(fd)  # releases the lock


def _sealed_secrets() -> dict[str, list[str]]:
    """Key id → the names of the stored secrets it sealed (the store is asked only when a key
    file turns out empty)."""
    from flows.store import db
    from flows.store import secrets as secret_store

    db.init_db()
    return secret_store.sealed_by_key()


def _replace_keyless_file(path: Path, header: str, sealed: Callable[[], dict[str, list[str]]] | None) -> None:
    """Put a new key into ``path``, which holds none; ``sealed`` (for the secret key file) lists
    the stored secrets, which forbid it (see the module docstring)."""
    with _locked(path) as same:
        if not same or not _holds_no_key(path.read_text(encoding="utf-8")):
            return  # another process wrote a key meanwhile: that one is used
        by_key = sealed() if sealed is not None else {}
        if by_key:
            names = sorted(n for found in by_key.values() for n in found)
            shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
            raise SecretKeyError(
                f"{path} holds no key, but the store keeps {len(names)} secret(s) sealed with key(s) "
                f"{', '.join(sorted(by_key))} ({shown}): put that key file back from a backup (or set "
                f"{ENV_KEYS} to those keys); if the key is lost, the secrets cannot be opened — delete them "
                f"with `ergon secrets delete NAME` and set them again, and Ergon makes a new key then")
        write_atomic(path, header + f"k1:{generate_key()}\n", mode=0o600)


_SECRET_HEADER = "# Ergon secret keys: ID:BASE64, first = active. Keep this file private.\n"


def load_keyring(*, create: bool = False) -> KeyRing:
    """The configured keys (see the module docstring). ``create`` makes the default key file
    when nothing is configured (or replaces an empty one); without it a missing key is a
    :class:`SecretKeyError`."""
    from_env = os.environ.get(ENV_KEYS, "").strip()
    if from_env:
        keys, active = parse_keys(from_env, ENV_KEYS)
        return KeyRing(keys, active, ENV_KEYS)
    named = os.environ.get(ENV_KEY_FILE, "").strip()
    path = Path(named).expanduser() if named else default_key_file()
    if not path.exists():
        if named:
            raise SecretKeyError(f"{ENV_KEY_FILE} names {path}, which does not exist")
        if not create:
            raise SecretKeyError(f"no secret key: set {ENV_KEYS} or {ENV_KEY_FILE}, or store a first secret with "
                                 f"`ergon secrets set NAME` (it creates {path})")
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            _write_new_file(path, _SECRET_HEADER + f"k1:{generate_key()}\n")
        except FileExistsError:
            pass  # another process created it first: use theirs
    check_file_mode(path)
    text = path.read_text(encoding="utf-8")
    if not named and _holds_no_key(text):
        if not create:
            raise SecretKeyError(f"{path} holds no key (a first `ergon secrets set` could not finish writing it): "
                                 f"`ergon secrets set NAME` makes one")
        _replace_keyless_file(path, _SECRET_HEADER, _sealed_secrets)
        text = path.read_text(encoding="utf-8")
    keys, active = parse_keys(text, str(path))
    return KeyRing(keys, active, str(path), file=path)


def add_key_to_file(ring: KeyRing) -> str:
    """Put a new random key first in the ring's key file; returns its id. Env-var keys are the
    operator's to change, so that case is refused with what to do instead."""
    if ring.file is None:
        raise SecretKeyError(f"keys come from {ENV_KEYS}: put a new `ID:BASE64` entry first there "
                             f"(`ergon secrets generate-key` prints one), then run `ergon secrets rotate`")
    n = len(ring.keys) + 1
    while f"k{n}" in ring.keys:
        n += 1
    key_id = f"k{n}"
    old = ring.file.read_text(encoding="utf-8")
    lines = old.splitlines(keepends=True)
    # keep a leading comment line on top; the new key goes first among the keys (= active)
    head = lines[:1] if lines and lines[0].lstrip().startswith("#") else []
    rest = lines[len(head):]
    # a crash or a full disk leaves the old file or the new one, never half of one
    write_atomic(ring.file, "".join(head) + f"{key_id}:{generate_key()}\n" + "".join(rest),
                 mode=stat.S_IMODE(ring.file.stat().st_mode))
    return key_id


def signing_key(name: str) -> bytes:
    """A key for signing (not sealing) kept in ``ERGON_HOME/<name>.key``: created on first use
    (mode 0600, one ``ID:BASE64`` entry like the secret key file), refused when others can read
    it. Each use gets its own file, so replacing one (which voids what it signed, e.g. every
    dashboard sign-in) touches nothing else."""
    from flows.settings import ergon_home

    path = ergon_home() / f"{name}.key"
    header = f"# Ergon signing key ({name}): ID:BASE64. Keep this file private.\n"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            _write_new_file(path, header + f"k1:{generate_key()}\n")
        except FileExistsError:
            pass  # another process created it first: use theirs
    check_file_mode(path)
    text = path.read_text(encoding="utf-8")
    if _holds_no_key(text):  # left by an older Ergon on a full disk: nothing was signed with it
        _replace_keyless_file(path, header, None)
        text = path.read_text(encoding="utf-8")
    keys, active = parse_keys(text, str(path))
    return keys[active]
