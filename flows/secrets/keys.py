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

Keys are 32 random bytes (AES-256), base64 (standard or URL-safe alphabet). Error messages name
key ids and files, never key material.
"""

from __future__ import annotations

from flows.errors import ErgonError

import base64
import binascii
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

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
    """Create ``path`` with mode 0600 from the start (never world-readable, even briefly)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(content)


def load_keyring(*, create: bool = False) -> KeyRing:
    """The configured keys (see the module docstring). ``create`` makes the default key file
    when nothing is configured; without it a missing key is a :class:`SecretKeyError`."""
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
        try:
            _write_new_file(path, f"# Ergon secret keys: ID:BASE64, first = active. Keep this file private.\n"
                                  f"k1:{generate_key()}\n")
        except FileExistsError:
            pass  # another process created it first: use theirs
    check_file_mode(path)
    keys, active = parse_keys(path.read_text(encoding="utf-8"), str(path))
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
    tmp = ring.file.with_name(ring.file.name + ".new")
    tmp.unlink(missing_ok=True)
    _write_new_file(tmp, "".join(head) + f"{key_id}:{generate_key()}\n" + "".join(rest))
    os.replace(tmp, ring.file)  # atomic: a crash leaves the old file or the new one, never half
    return key_id


def signing_key(name: str) -> bytes:
    """A key for signing (not sealing) kept in ``ERGON_HOME/<name>.key``: created on first use
    (mode 0600, one ``ID:BASE64`` entry like the secret key file), refused when others can read
    it. Each use gets its own file, so replacing one (which voids what it signed, e.g. every
    dashboard sign-in) touches nothing else."""
    from flows.settings import ergon_home

    path = ergon_home() / f"{name}.key"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            _write_new_file(path, f"# Ergon signing key ({name}): ID:BASE64. Keep this file private.\n"
                                  f"k1:{generate_key()}\n")
        except FileExistsError:
            pass  # another process created it first: use theirs
    check_file_mode(path)
    keys, active = parse_keys(path.read_text(encoding="utf-8"), str(path))
    return keys[active]
