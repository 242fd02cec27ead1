"""Applying a node's writes to the run's context — the contract every node type goes through.

A write is accepted only if every field is declared in the node's ``writes``, the merged context
is valid against ``context.schema``, and the merged context is at most 64 KB serialized. Any
violation rejects the whole update and leaves the context as it was: the caller gets a
:class:`WriteRejected` and the old context object is untouched (updates build a new dict).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from flows.runtime.errors import ContextTooLarge, WriteRejected
from flows.schema import schema_errors

MAX_CONTEXT_BYTES = 64 * 1024


def apply_update(
    context: dict[str, Any], update: dict[str, Any], *, writes: Iterable[str], schema: dict, node_id: str
) -> dict[str, Any]:
    """The new context after ``update``; raises :class:`WriteRejected` and changes nothing on error."""
    if not update:
        return context
    allowed = set(writes)
    outside = sorted(k for k in update if k not in allowed)
    if outside:
        raise WriteRejected(
            f"node `{node_id}` tried to write {', '.join(f'`{k}`' for k in outside)} outside its declared "
            f"writes ({', '.join(sorted(allowed)) or 'none'})"
        )
    merged = {**context, **update}
    problems = schema_errors(schema, merged)
    if problems:
        raise WriteRejected(f"node `{node_id}` wrote a context that violates context.schema: {'; '.join(problems[:5])}")
    size = len(json.dumps(merged, default=str).encode())
    if size > MAX_CONTEXT_BYTES:
        raise ContextTooLarge(
            f"node `{node_id}` would grow the context to {size} bytes, over the {MAX_CONTEXT_BYTES}-byte cap; "
            "store large payloads as artifacts and keep a reference in the context"
        )
    return merged


def get_path(data: Any, path: str) -> Any:
    """``a.b.0.c`` lookup in nested dicts/lists; KeyError naming the missing segment."""
    cur = data
    for seg in path.split("."):
        if isinstance(cur, dict) and seg in cur:
            cur = cur[seg]
        elif isinstance(cur, list) and seg.isdigit() and int(seg) < len(cur):
            cur = cur[int(seg)]
        else:
            raise KeyError(f"`{path}`: no `{seg}` here")
    return cur
