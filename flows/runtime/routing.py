"""Picking the next node of a state machine after a visit.

The rules of the seed's process model, in order:

* a ``condition`` node takes the first branch whose ``when`` passes, else its ``default`` branch;
* an ``agent`` node with agent-triggered transitions takes ``_next_node`` from its result (which
  must name one of them), or the only one there is;
* otherwise the first ``auto``/``user`` transition whose guard passes (no guard = always) wins;
* nothing passing is an error that names the node and every guard that was tried.

A guard using ``artifact_exists`` asks ``artifacts`` for the run's artifact keys (see
:func:`run_artifact_keys`); other guards never touch the store.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

from compiler.guards import evaluate
from compiler.plan import PlanEdge, PlanNode
from flows.runtime.errors import NodeFailed, NoTransition
from flows.store.artifacts import artifacts_for_run

ArtifactKeys = Callable[[], Iterable[str]]


def run_artifact_keys(run_id: str | None) -> ArtifactKeys:
    """The keys of a run's artifacts, read from the store when a guard first asks."""
    def keys() -> list[str]:
        return sorted({a.key for a in artifacts_for_run(run_id)}) if run_id else []
    return keys


def _guard_text(guard: Any) -> str:
    return "always" if guard is None else json.dumps(guard, separators=(",", ":"))


def next_node(node: PlanNode, exits: list[PlanEdge], context: dict[str, Any], output: Any,
              artifacts: ArtifactKeys | None = None) -> str | None:
    """The id of the next node, or None after a final node."""
    if node.type == "final":
        return None
    if node.type == "condition":
        default = None
        for edge in exits:
            if edge.kind == "default":
                default = default or edge.target
            elif edge.kind == "branch" and evaluate(edge.guard, context, artifacts):
                return edge.target
        if default:
            return default
        raise NoTransition(f"no branch of condition `{node.id}` matched and it has no default")
    transitions = [e for e in exits if e.kind == "transition"]
    agent_exits = [e for e in transitions if e.trigger == "agent"]
    if node.type == "agent" and agent_exits:
        chosen = output.get("_next_node") if isinstance(output, dict) else None
        targets = [e.target for e in agent_exits]
        if chosen is not None:
            if chosen not in targets:
                raise NodeFailed(f"agent `{node.id}` chose `_next_node` = {chosen!r}, not one of {targets}")
            return chosen
        if len(agent_exits) == 1:
            return agent_exits[0].target
        raise NodeFailed(f"agent `{node.id}` returned no `_next_node` and has {len(targets)} agent transitions")
    for edge in transitions:
        if edge.trigger == "agent":
            continue
        if edge.guard is None or evaluate(edge.guard, context, artifacts):
            return edge.target
    tried = "; ".join(f"→ {e.target} when {_guard_text(e.guard)}" for e in transitions) or "no transitions"
    raise NoTransition(f"no transition matched after `{node.id}` (tried: {tried})")
