"""The `interaction` node: one structured model call of a named interaction, rendered over the context."""

from __future__ import annotations

from typing import Any

from compiler.ir import InteractionNode
from compiler.plan import PlanNode
from compiler.templates import render_value
from flows.llm.interactions import run_interaction
from flows.llm.types import LlmError
from flows.runtime.bodies.llm import budget_guard, model_of, update_from
from flows.runtime.effects import Effect, Services
from flows.runtime.errors import NodeFailed


async def run(node: PlanNode, context: dict[str, Any], services: Services, visit_id: str | None) -> Effect:
    if services.resolve_interaction is None:
        raise NodeFailed(f"`{node.id}`: this run cannot resolve interactions", kind="internal")
    body = node.body_as(InteractionNode)
    interaction = services.resolve_interaction(body.interaction)
    data = render_value(body.input or {}, context)
    guard = budget_guard(node, services, visit_id)
    guard()
    try:
        result = await run_interaction(
            interaction, data, result_schema=node.result_schema,
            model=model_of(node, services, interaction.model or interaction.environment),
            run_id=services.run_id, visit_id=visit_id, environments=services.environments,
        )
    except LlmError as exc:
        raise NodeFailed(f"interaction `{interaction.name}` on `{node.id}`: {exc}") from exc
    guard()  # over budget after the call: the node fails and writes nothing
    return Effect(update=update_from(node, result), output=result, input=data)
