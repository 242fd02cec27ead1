"""Derived result schemas of LLM nodes (seed 002, "Agent nodes": the contract).

An interaction or agent node returns one JSON object whose schema is *derived*, never written
by the author: ``node.writes`` filtered through ``context.schema.properties``, every field
required, nothing else allowed. When an agent node has two or more agent-triggered transitions
the object must also name the next node in ``_next_node`` (enum of the targets); with exactly
one the engine picks it itself, so the field is not asked for.
"""

from __future__ import annotations

import copy
from typing import Any

NEXT_NODE = "_next_node"


def derived_result_schema(context_schema: dict[str, Any], writes: list[str], next_nodes: list[str] | None = None) -> dict[str, Any]:
    """The result schema of a node writing ``writes`` (see the module docstring).

    Subschemas are deep-copied so that a caller mutating the result never changes the context
    schema it came from.
    """
    props_in = (context_schema or {}).get("properties") or {}
    properties: dict[str, Any] = {w: copy.deepcopy(props_in[w]) for w in writes if w in props_in}
    required = list(properties)
    targets = list(dict.fromkeys(next_nodes or []))
    if len(targets) >= 2:
        properties[NEXT_NODE] = {"type": "string", "enum": targets}
        required.append(NEXT_NODE)
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}
