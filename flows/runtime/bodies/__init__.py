"""What each node type does: one module per body kind, looked up in :data:`BODIES`.

Every body has the same signature, ``run(node, context, services, visit_id) -> Effect``: it reads
the context, calls the outside world only through :class:`~flows.runtime.effects.Services`, and
returns the update it wants to make. ``foreach`` and ``branch`` are not bodies: the engine runs
their items (each item is a leaf body of its own). A template run's steps are
:mod:`~flows.runtime.bodies.template_step` (agents whose answers cite their input).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from compiler.plan import PlanNode
from flows.runtime.bodies import agent, human_task, interaction, process, template_step, tool
from flows.runtime.effects import Effect, Services
from flows.runtime.errors import NodeFailed

Body = Callable[[PlanNode, dict[str, Any], Services, "str | None"], Awaitable[Effect]]


async def _routing_only(node: PlanNode, context: dict[str, Any], services: Services, visit_id: str | None) -> Effect:
    """`condition` and `final` nodes do nothing; their exits route."""
    return Effect()


#: node type → its body
BODIES: dict[str, Body] = {
    "tool": tool.run,
    "process": process.run,
    "interaction": interaction.run,
    "agent": agent.run,
    "human_task": human_task.run,
    "condition": _routing_only,
    "final": _routing_only,
}


async def leaf_effect(node: PlanNode, context: dict[str, Any], services: Services, visit_id: str | None) -> Effect:
    """Run the body of a leaf node."""
    if services.template is not None and services.template.is_step(node):
        return await template_step.run(node, context, services, visit_id)
    body = BODIES.get(node.type)
    if body is None:
        raise NodeFailed(f"`{node.type}` is not a leaf node type (node `{node.id}`)", kind="internal")
    return await body(node, context, services, visit_id)
