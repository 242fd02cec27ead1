"""The LLM node bodies: `interaction` (one structured call) and `agent` (a tool loop).

Both return a result object that the engine turns into a context update through the node's
``writes`` (``_next_node`` is routing, never written). The result schema is the one the
compiler derived from ``writes`` ∩ ``context.schema`` (plus ``_next_node``), so the model is
asked for exactly what the node may write; anything else fails the node and writes nothing.
"""

from __future__ import annotations

from typing import Any

from compiler.plan import PlanNode
from compiler.templates import render, render_value
from flows.runtime.errors import NodeFailed


def _update(node: PlanNode, result: Any) -> dict[str, Any]:
    if not isinstance(result, dict):
        return {node.writes[0]: result} if len(node.writes) == 1 else {}
    return {k: v for k, v in result.items() if k != "_next_node" and k in node.writes}


def _guard(node: PlanNode, services: Any, visit_id: str | None):
    from flows.runtime import budget

    def check() -> None:
        budget.check(run_id=services.run_id, visit_id=visit_id, node_id=node.id,
                     node_budget=node.body.get("budget"), run_budget=services.run_budget)

    return check


def _model(node: PlanNode, services: Any, fallback: str | None = None) -> str | None:
    body = node.body
    return body.get("model") or body.get("environment") or fallback or services.default_environment


async def interaction_effect(node: PlanNode, context: dict[str, Any], services: Any, visit_id: str | None):
    from flows.llm.interactions import run_interaction
    from flows.llm.types import LlmError
    from flows.runtime.bodies import Effect

    interaction = services.resolve_interaction(node.body["interaction"])
    data = render_value(node.body.get("input") or {}, context)
    guard = _guard(node, services, visit_id)
    guard()
    try:
        result = await run_interaction(
            interaction, data, result_schema=node.result_schema,
            model=_model(node, services, interaction.model or interaction.environment),
            run_id=services.run_id, visit_id=visit_id, environments=services.environments,
        )
    except LlmError as exc:
        raise NodeFailed(f"interaction `{interaction.name}` on `{node.id}`: {exc}") from exc
    guard()  # over budget after the call: the node fails and writes nothing
    return Effect(update=_update(node, result), output=result, input=data)


async def agent_effect(node: PlanNode, context: dict[str, Any], services: Any, visit_id: str | None):
    from flows.llm.agent import AgentTask, run_agent
    from flows.llm.types import LlmError
    from flows.runtime.bodies import Effect
    from flows.tools.context import CURRENT, ToolContext

    body = node.body
    task = AgentTask(
        node_id=node.id, prompt=render(body.get("prompt") or "", context), process_name=services.process_name,
        process_description=services.process_description, writes=list(node.writes),
        result_schema=node.result_schema or {"type": "object"}, context=context,
        tools=list(node.agent_tools or []), next_nodes=list(node.next_node_enum or []),
        max_iterations=body.get("max_iterations", 20), model=_model(node, services),
        run_id=services.run_id, visit_id=visit_id, guard=_guard(node, services, visit_id),
    )
    token = CURRENT.set(ToolContext(run_id=services.run_id, visit_id=visit_id, node_id=node.id,
                                    started_by=services.started_by, assignee=body.get("ask_user"),
                                    listener=services.listener))
    try:
        result = await run_agent(task, environments=services.environments)
    except LlmError as exc:
        raise NodeFailed(f"agent `{node.id}`: {exc}") from exc
    finally:
        CURRENT.reset(token)
    return Effect(update=_update(node, result.output), output=result.output,
                  input={"prompt": task.prompt, "tools": task.tools})
