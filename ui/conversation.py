"""An LLM conversation as it was sent and received, for the run page's node inspector.

Prompts are shown preformatted — a prompt's line breaks, indentation and ``- `` lines are what
the model read, and markdown would collapse or re-shape them. Recorded values often carry JSON
*as text* (a response's content is the JSON string the model wrote); :func:`unwrap` parses such
text, at any depth, so a response reads as the object it is. Calls of a foreach or branch are
labelled with their item. Pure helpers; the run page draws.
"""

from __future__ import annotations

import json
from typing import Any

_MAX_DEPTH = 4


def unwrap(value: Any, depth: int = 0) -> Any:
    """``value`` with every string that holds a JSON object or array parsed (recursively)."""
    if depth > _MAX_DEPTH:
        return value
    if isinstance(value, str):
        text = value.strip()
        if text[:1] in ("{", "[") and text[-1:] in ("}", "]"):
            try:
                return unwrap(json.loads(text), depth + 1)
            except ValueError:
                return value
        return value
    if isinstance(value, dict):
        return {k: unwrap(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [unwrap(v, depth + 1) for v in value]
    return value


def call_heading(number: int, call: Any, item: str | None, money: str) -> str:
    """``LLM call 2 · item `n3` · `model` · 12+7 tokens · $0.0020 · 840 ms`` (latency "—" if unknown)."""
    latency = f"{call.latency_ms:,} ms" if call.latency_ms is not None else "latency —"
    return (f"**LLM call {number}**" + (f" · item `{item}`" if item else "") + f" · `{call.model}` · "
            f"{call.tokens_in}+{call.tokens_out} tokens · {money} · {latency}"
            + (" · repair" if call.repair else "") + (" · offline" if call.offline else ""))


def message_text(message: Any) -> tuple[str, Any]:
    """``(role, content)`` of a recorded message (content unwrapped)."""
    if isinstance(message, dict):
        return str(message.get("role") or "user"), unwrap(message.get("content"))
    return "user", unwrap(message)
