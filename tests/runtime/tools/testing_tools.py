"""Tools used by the runtime tests: real functions with observable side effects (files under
ERGON_HOME), so tests can count executions across retries, crashes and resumes."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from flows.tools import tool


def _ledger(name: str) -> Path:
    folder = Path(os.environ["ERGON_HOME"]) / "ledger"
    folder.mkdir(parents=True, exist_ok=True)
    return folder / name


@tool
def flaky(key: str, failures: int) -> dict:
    """Fail `failures` times for `key`, then succeed; returns how many attempts it took."""
    path = _ledger(f"flaky-{key}")
    count = int(path.read_text()) + 1 if path.exists() else 1
    path.write_text(str(count))
    if count <= failures:
        raise ConnectionError(f"flaky failure {count} of {failures}")
    return {"attempts": count}


@tool
def increment(value: int) -> dict:
    """Add one."""
    return {"counter": value + 1}


@tool
def double_unless(value: int, bad: int = -1) -> dict:
    """Double a number; fail on the `bad` value."""
    if value == bad:
        raise ValueError(f"item {value} is bad")
    return {"doubled": value * 2}


@tool
def mark(name: str, seconds: float = 0.0) -> dict:
    """Append `name` to the execution ledger (optionally after a pause) and return it."""
    if seconds:
        time.sleep(seconds)
    with _ledger("marks").open("a") as fh:
        fh.write(name + "\n")
    return {"last": name}


@tool
def blob(size: int) -> dict:
    """A string of `size` characters."""
    return {"blob": "x" * size}


def marks() -> list[str]:
    path = _ledger("marks")
    return path.read_text().split() if path.exists() else []


@tool
def echo(value: Any = None) -> Any:
    """Return ``value`` unchanged (workflow-DSL tests: projection and fetch)."""
    return value


@tool
def heap_state() -> dict:
    """What the garbage collector of the process running the visit looks like (see flows.heap)."""
    import gc

    return {"frozen": gc.get_freeze_count(), "collector_on": gc.isenabled()}
