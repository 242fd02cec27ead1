"""The `agent` node: a model in a tool loop (:func:`flows.llm.agent.run_agent`) until it answers.

The agent's tools run with this visit as their tool context; its ``ask_user`` tool asks a person
through the same human-task path as a `human_task` node (:func:`flows.runtime.bodies.human_task.ask_person`).
"""

from __future__ import annotations

import functools
from typing import Any

from compiler.ir import AgentNode
from compiler.plan import PlanNode
from compiler.templates import render
from flows.llm.agent import AgentTask, run_agent
from flows.llm.types import LlmError
from flows.runtime.bodies.human_task import ask_person
from flows.runtime.bodies.llm import budget_guard, model_of, update_from
from flows.runtime.effects import Effect, Services
from flows.runtime.errors import NodeFailed
from flows.tools.context import CURRENT, ToolContext


async def run(node: PlanNode, context: dict[str, Any], services: Services, visit_id: str | None) -> Effect:
    body = node.body_as(AgentNode)
    task = AgentTask(
        node_id=node.id, prompt=render(body.prompt or "", context), process_name=services.process_name,
        process_description=services.process_description, writes=list(node.writes),
        result_schema=node.result_schema or {"type": "object"}, context=context,
        tools=list(node.agent_tools or []), next_nodes=list(node.next_node_enum or []),
        max_iterations=body.max_iterations, model=model_of(node, services),
        run_id=services.run_id, visit_id=visit_id, guard=budget_guard(node, services, visit_id),
    )
    token = CURRENT.set(ToolContext(run_id=services.run_id, visit_id=visit_id, node_id=node.id,
                                    started_by=services.started_by, assignee=body.ask_user,
                                    ask=functools.partial(ask_person, services, visit_id=visit_id)))
    try:
        result = await run_agent(task, environments=services.environments)
    except LlmError as exc:
        raise NodeFailed(f"agent `{node.id}`: {exc}") from exc
    finally:
        CURRENT.reset(token)
    return Effect(update=update_from(node, result.output), output=result.output,
                  input={"prompt": task.prompt, "tools": task.tools})
