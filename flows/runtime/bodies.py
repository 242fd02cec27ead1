"""What each leaf node type does, given the context: it returns an :class:`Effect`.

A body never touches the context itself: it returns the update it wants to make (checked and
applied by the engine through :func:`flows.runtime.context.apply_update`) and the output to
record. Bodies that need the outside world (sub-processes, LLM calls) get it through the
:class:`Services` the engine passes in, so that this module does not know about Prefect.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from compiler.plan import Plan, PlanNode
from compiler.templates import render_value
from flows.runtime.context import get_path
from flows.runtime.errors import InputRejected, NodeFailed


@dataclass
class Effect:
    """The result of a leaf body: what to write, what to record."""

    update: dict[str, Any] = field(default_factory=dict)
    output: Any = None
    input: Any = None
    child_run_id: str | None = None
    #: set when the body itself decides where the run goes (a human task's `on_timeout`)
    route_to: str | None = None


@dataclass
class ChildResult:
    """A finished sub-process run."""

    run_id: str
    status: str
    outcome: str | None
    context: dict[str, Any]
    error: str | None = None


@dataclass
class Services:
    """What bodies may call outside themselves (supplied by the backend)."""

    #: run a child Plan as a subflow: (plan, inputs, parent visit id) → ChildResult
    run_child: Callable[[Plan, dict[str, Any], str | None], Awaitable[ChildResult]]
    #: find a Plan by definition name and optional pinned version
    resolve_plan: Callable[[str, int | None], Plan]
    #: find an interaction definition by name
    resolve_interaction: Callable[[str], Any] = None  # type: ignore[assignment]
    #: environment definitions by name (model failover lists)
    environments: dict[str, Any] = field(default_factory=dict)
    default_environment: str | None = None
    run_id: str | None = None
    started_by: str | None = None
    process_name: str = ""
    process_description: str | None = None
    #: the run's token/cost ceiling (the definition's `budget:`)
    run_budget: dict[str, Any] | None = None
    #: the engine's progress listener (event, node id, detail)
    listener: Callable[[str, str, dict[str, Any]], None] = lambda event, node, detail: None


def _project(result: Any, node: PlanNode) -> dict[str, Any]:
    """A tool's result as a context update: the whole result under `output`, else its keys in writes."""
    target = node.body.get("output")
    if target:
        return {target: result}
    if isinstance(result, dict):
        return {k: v for k, v in result.items() if k in node.writes}
    return {}


async def call_tool(name: str, args: dict[str, Any], services: Services | None = None, node: PlanNode | None = None,
                    visit_id: str | None = None) -> Any:
    """Call a tool the way agents do (:func:`flows.tools.invoke.invoke`: validated arguments,
    recorded call), with this visit as the tool context."""
    from flows.tools.context import CURRENT, ToolContext
    from flows.tools.errors import ToolArgumentError, UnknownTool
    from flows.tools.invoke import invoke

    token = CURRENT.set(ToolContext(run_id=services.run_id if services else None, visit_id=visit_id,
                                    node_id=node.id if node else None,
                                    started_by=services.started_by if services else None, record_calls=False))
    try:
        return await invoke(name, args)
    except (UnknownTool, ToolArgumentError) as exc:  # not the tool's own failure: never retried
        raise InputRejected(str(exc)) from exc
    finally:
        CURRENT.reset(token)


async def tool_body(node: PlanNode, context: dict[str, Any], services: Services | None = None,
                    visit_id: str | None = None) -> Effect:
    body = node.body
    fixed = (body.get("config") or {}).get("context_update")
    tool = body.get("tool")
    if fixed is not None and not tool:
        update = render_value(fixed, context)
        return Effect(update=update, output=update)
    args = render_value(body.get("input") or {}, context)
    if tool == "set_context":
        updates = args.get("updates") if isinstance(args, dict) else None
        if not isinstance(updates, dict):
            raise NodeFailed(f"`set_context` on `{node.id}` needs input `{{updates: {{...}}}}`")
        return Effect(update=updates, output=updates, input=args)
    if not tool:
        return Effect(input=args)
    result = await call_tool(tool, args, services, node, visit_id)
    update = _project(result, node)
    if fixed:
        update = {**render_value(fixed, context), **update}
    return Effect(update=update, output=result, input=args)


async def process_body(node: PlanNode, context: dict[str, Any], services: Services, visit_id: str | None) -> Effect:
    body = node.body
    child = node.child_plan or services.resolve_plan(body["process"], body.get("process_version"))
    inputs = render_value(body.get("input") or {}, context)
    result = await services.run_child(child, inputs, visit_id)
    if result.status != "completed":
        raise NodeFailed(f"sub-process `{child.name}` ended {result.status}: {result.error or result.outcome}")
    returns = body.get("returns") or {}
    final_state = {"context": result.context, "outcome": result.outcome, "run_id": result.run_id}
    if returns.get("from"):
        value = get_path(final_state, returns["from"])
    elif returns.get("context"):
        value = {k: result.context.get(k) for k in returns["context"]}
    else:
        value = {"outcome": result.outcome, "context": result.context}
    if returns.get("context") and not returns.get("from"):
        update = {k: v for k, v in value.items() if k in node.writes}
    elif len(node.writes) == 1:
        update = {node.writes[0]: value}
    else:
        update = {k: v for k, v in value.items() if k in node.writes} if isinstance(value, dict) else {}
    return Effect(update=update, output=value, input=inputs, child_run_id=result.run_id)


async def leaf_effect(node: PlanNode, context: dict[str, Any], services: Services, visit_id: str | None) -> Effect:
    """Run one leaf body (tool, interaction, agent, process) or routing-only node."""
    if node.type == "tool":
        return await tool_body(node, context, services, visit_id)
    if node.type == "process":
        return await process_body(node, context, services, visit_id)
    if node.type in ("condition", "final"):
        return Effect()
    if node.type == "interaction":
        from flows.runtime.llm_bodies import interaction_effect

        return await interaction_effect(node, context, services, visit_id)
    if node.type == "agent":
        from flows.runtime.llm_bodies import agent_effect

        return await agent_effect(node, context, services, visit_id)
    if node.type == "human_task":
        from flows.runtime.human import human_task_effect

        return await human_task_effect(node, context, services, visit_id)
    raise NodeFailed(f"`{node.type}` is not a leaf node type (node `{node.id}`)")
