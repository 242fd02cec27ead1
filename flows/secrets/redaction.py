"""Redaction: every secret value this process has opened is replaced by ``***`` wherever it would
be kept or shown.

A secret reaches a run as a model key or a tool's credential; a model can echo it back, a tool
can return it. So the values opened (:func:`remember`, called when a secret is revealed or a key
reference resolved) are redacted from what a node writes into the context (and so from its diffs,
the stored context, what later prompts see and what the CLI prints), from visit outputs, and from
LLM and tool call records (:func:`redact`). Values shorter than four characters are not
redacted (they would erase ordinary text); the registry lives as long as the process, which is
the process that runs the nodes using the secrets. With nothing opened, redaction costs one
check.
"""

from __future__ import annotations

import threading
from typing import Any

MASK = "***"
#: Shorter values would redact ordinary words.
MIN_LENGTH = 4

_opened: set[str] = set()
_ordered: tuple[str, ...] = ()
_lock = threading.Lock()


def remember(value: str) -> str:
    """Add an opened secret value to what is redacted; returns it."""
    global _ordered
    if isinstance(value, str) and len(value) >= MIN_LENGTH and value not in _opened:
        with _lock:
            _opened.add(value)
            _ordered = tuple(sorted(_opened, key=len, reverse=True))  # longest first: no partial masks
    return value


def redact_text(text: str) -> str:
    """``text`` with every remembered secret replaced by :data:`MASK`."""
    for secret in _ordered:
        if secret in text:
            text = text.replace(secret, MASK)
    return text


def redact(value: Any) -> Any:
    """``value`` with every remembered secret replaced in its strings (dicts and lists
    recursively, keys included); the same object when nothing needed replacing."""
    if not _ordered:
        return value
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        return {redact_text(k) if isinstance(k, str) else k: redact(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(redact(v) for v in value)
    return value
