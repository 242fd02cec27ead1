"""Derived result schemas of LLM nodes (seed 002, "Agent nodes": the contract).

An interaction or agent node returns one JSON object whose schema is *derived*, never written
by the author: ``node.writes`` filtered through ``context.schema.properties``, every field
required, nothing else allowed. When an agent node has two or more agent-triggered transitions
the object must also name the next node in ``_next_node`` (enum of the targets); with exactly
one the engine picks it itself, so the field is not asked for.

The body of a foreach or branch whose results are collected writes its *item's* result, not the
context: a field the context does not declare takes its schema from the interaction's own
``result_schema`` there. This one function is both what the runtime validates a model's answer
against (the Plan's ``result_schema``) and what ``ergon check`` holds ``writes`` to
(:func:`unheld_writes`, ``write-not-held``): a write neither declares would be dropped from the
answer, so the checker refuses it rather than let the two disagree.
"""

from __future__ import annotations

import copy
from typing import Any

NEXT_NODE = "_next_node"


def derived_result_schema(context_schema: dict[str, Any], writes: list[str], next_nodes: list[str] | None = None,
                          *, declared: dict[str, Any] | None = None, collected: bool = False) -> dict[str, Any]:
    """The result schema of a node writing ``writes`` (see the module docstring): ``declared`` is
    the node's interaction's own result schema, consulted for a ``collected`` fan-out body.

    Subschemas are deep-copied so that a caller mutating the result never changes the context
    schema it came from.
    """
    props_in = (context_schema or {}).get("properties") or {}
    own = ((declared or {}).get("properties") or {}) if collected else {}
    properties: dict[str, Any] = {}
    for w in writes:
        source = props_in if w in props_in else own if w in own else None
        if source is not None:
            properties[w] = copy.deepcopy(source[w])
    required = list(properties)
    targets = list(dict.fromkeys(next_nodes or []))
    if len(targets) >= 2:
        properties[NEXT_NODE] = {"type": "string", "enum": targets}
        required.append(NEXT_NODE)
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


def unheld_writes(schema: dict[str, Any], writes: list[str]) -> list[str]:
    """The ``writes`` that :func:`derived_result_schema` could not hold (no schema declares them)."""
    held = schema.get("properties") or {}
    return [w for w in writes if w not in held]


#: The result schema of each interaction a workspace defines, by name (None: it answers text).
InteractionResults = dict[str, dict[str, Any] | None] | None


def interaction_results(ws: Any) -> dict[str, dict[str, Any] | None]:
    """The result schemas of the built-in ``sys:`` interactions and of ``ws``'s interaction definitions."""
    from compiler.builtin_interactions import BUILTIN

    found: dict[str, dict[str, Any] | None] = {name: d.result_schema for name, d in BUILTIN.items()}
    for name, unit in ws.named("interaction").items():
        if unit.defn is not None:
            found[name] = getattr(unit.defn, "result_schema", None)
    return found


def node_result_schema(node: Any, context_schema: dict[str, Any], next_nodes: list[str] | None = None, *,
                       results: InteractionResults = None, collected: bool = False) -> dict[str, Any]:
    """The result schema of an interaction or agent node — the Plan's, which the runtime validates
    against, and the one ``ergon check`` holds the node's ``writes`` to: :func:`derived_result_schema`
    with an interaction node's own interaction's result schema (found in ``results``)."""
    name = getattr(node, "interaction", None) if getattr(node, "type", None) == "interaction" else None
    declared = (results or {}).get(name) if name else None
    return derived_result_schema(context_schema, list(node.writes), next_nodes, declared=declared, collected=collected)
