"""Secrets fixtures: a fresh store with keys from ERGON_SECRET_KEYS, and helpers to read the
store's database file as raw bytes (what an attacker holding a copy of it would see)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def keyed(store, monkeypatch, tmp_path):
    """A store plus one active key ``k1`` from ERGON_SECRET_KEYS; returns the key entry."""
    from flows.secrets.keys import generate_key

    monkeypatch.setenv("ERGON_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("ERGON_SECRET_KEY_FILE", raising=False)
    entry = f"k1:{generate_key()}"
    monkeypatch.setenv("ERGON_SECRET_KEYS", entry)
    return entry


@pytest.fixture
def database_bytes(store):
    """database_bytes() → every byte SQLite keeps for the store (the file, its WAL and shared
    memory), read after closing the connections so that nothing is held only in memory."""
    from flows.store import db

    def read() -> bytes:
        db.dispose_all()
        path = Path(store.removeprefix("sqlite:///"))
        return b"".join(p.read_bytes() for p in (path, path.with_name(path.name + "-wal"),
                                                 path.with_name(path.name + "-shm")) if p.exists())

    return read
