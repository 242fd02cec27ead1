"""Cassettes: model responses stored in a JSON file so that runs can be replayed without a model.

A cassette maps a key — the SHA-256 of the canonical JSON of ``(model, messages, tools,
schema)`` — to the response that request got. Two ways to turn one on:

* the environment: ``ERGON_CASSETTE_RECORD=path`` stores every response the gateway gets,
  ``ERGON_CASSETTE_REPLAY=path`` answers from the file;
* code: ``with use_cassette(record=path): ...`` / ``with use_cassette(replay=path): ...``
  (the CLI's ``--record`` / ``--replay``), which wins over the environment.

Replay never falls through to a model: a request that is not in the cassette raises
:class:`~flows.llm.types.LlmError` naming the key and the model, so a changed prompt shows up
as a loud failure, not as a silent (and billed) call. The file is rewritten after each new
entry (write to a temporary file, then rename), so a crashed run keeps what it recorded.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flows.llm.types import LlmError

__all__ = ["Cassette", "active", "cassette_key", "use_cassette"]

VERSION = 1


def cassette_key(model: str, messages: list[dict[str, Any]], tools: Any, schema: Any) -> str:
    """The key of one request: the SHA-256 of its canonical JSON."""
    canonical = json.dumps({"model": model, "messages": messages, "tools": tools, "schema": schema},
                           sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class Cassette:
    """One cassette file, loaded once and kept in memory (shared by every user of the path)."""

    _open: dict[Path, Cassette] = {}
    _open_lock = threading.Lock()

    def __init__(self, path: Path):
        self.path = path
        self._lock = threading.Lock()
        self.entries: dict[str, dict[str, Any]] = {}
        if path.is_file():
            data = json.loads(path.read_text(encoding="utf-8") or "{}")
            self.entries = dict(data.get("entries", {}))

    @classmethod
    def at(cls, path: str | os.PathLike[str]) -> Cassette:
        resolved = Path(path).resolve()
        with cls._open_lock:
            cassette = cls._open.get(resolved)
            # A file changed or removed behind our back (another process, a test) is re-read.
            if cassette is None or (not resolved.exists() and cassette.entries):
                cassette = cls._open[resolved] = Cassette(resolved)
            return cassette

    def get(self, key: str) -> dict[str, Any] | None:
        return self.entries.get(key)

    def put(self, key: str, entry: dict[str, Any]) -> None:
        with self._lock:
            self.entries[key] = entry
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_name(self.path.name + ".tmp")
            tmp.write_text(json.dumps({"version": VERSION, "entries": self.entries}, indent=1, ensure_ascii=False,
                                      default=str), encoding="utf-8")
            tmp.replace(self.path)


@dataclass(frozen=True)
class Mode:
    record: Path | None = None
    replay: Path | None = None


_stack: list[Mode] = []
_stack_lock = threading.Lock()


@contextmanager
def use_cassette(*, record: str | os.PathLike[str] | None = None,
                 replay: str | os.PathLike[str] | None = None) -> Iterator[None]:
    """Record to and/or replay from cassette files inside the ``with`` block.

    Module-wide rather than per task: a run's node visits may execute in worker threads, and
    they must all see the run's cassette.
    """
    if replay is not None and not Path(replay).is_file():
        raise LlmError(f"cassette {replay} does not exist: record it first with --record")
    mode = Mode(Path(record) if record else None, Path(replay) if replay else None)
    with _stack_lock:
        _stack.append(mode)
    try:
        yield
    finally:
        with _stack_lock:
            _stack.remove(mode)


def active() -> Mode:
    """The cassette mode in force: the innermost ``use_cassette``, else the environment."""
    with _stack_lock:
        if _stack:
            return _stack[-1]
    record, replay = os.environ.get("ERGON_CASSETTE_RECORD"), os.environ.get("ERGON_CASSETTE_REPLAY")
    return Mode(Path(record) if record else None, Path(replay) if replay else None)
