"""What the two LLM bodies (:mod:`~flows.runtime.bodies.interaction`, :mod:`~flows.runtime.bodies.agent`) share.

Both return a result object that the engine turns into a context update through the node's
``writes`` (``_next_node`` is routing, never written). The result schema is the one the
compiler derived from ``writes`` ∩ ``context.schema`` (plus ``_next_node``), so the model is
asked for exactly what the node may write; anything else fails the node and writes nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from compiler.ir import AgentNode, InteractionNode
from compiler.plan import PlanNode
from flows.runtime import budget
from flows.runtime.effects import Services


def llm_body(node: PlanNode) -> AgentNode | InteractionNode:
    """The body of an agent or interaction node."""
    body = node.body
    if not isinstance(body, (AgentNode, InteractionNode)):
        raise TypeError(f"node `{node.id}` is a `{node.type}` node, not an agent or interaction")
    return body


def update_from(node: PlanNode, result: Any) -> dict[str, Any]:
    """The context update of a model's result: its fields the node writes (one write takes a bare value)."""
    if not isinstance(result, dict):
        return {node.writes[0]: result} if len(node.writes) == 1 else {}
    return {k: v for k, v in result.items() if k != "_next_node" and k in node.writes}


def budget_guard(node: PlanNode, services: Services, visit_id: str | None) -> Callable[[], None]:
    """A check of the node's and the run's token/cost budget, called around every model call."""

    def check() -> None:
        budget.check(run_id=services.run_id, visit_id=visit_id, node_id=node.id,
                     node_budget=llm_body(node).budget, run_budget=services.run_budget)

    return check


def model_of(node: PlanNode, services: Services, fallback: str | None = None) -> str | None:
    """The model or environment a node calls: its own, the interaction's, the definition's."""
    body = llm_body(node)
    return body.model or body.environment or fallback or services.default_environment
