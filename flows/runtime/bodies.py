"""What each leaf node type does, given the context: it returns an :class:`Effect`.

A body never touches the context itself: it returns the update it wants to make (checked and
applied by the engine through :func:`flows.runtime.context.apply_update`) and the output to
record. Bodies that need the outside world (sub-processes, LLM calls) get it through the
:class:`Services` the engine passes in, so that this module does not know about Prefect.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from compiler.plan import Plan, PlanNode
from compiler.templates import render_value
from flows.runtime.context import get_path
from flows.runtime.errors import NodeFailed
from flows.tools import REGISTRY


@dataclass
class Effect:
    """The result of a leaf body: what to write, what to record."""

    update: dict[str, Any] = field(default_factory=dict)
    output: Any = None
    input: Any = None
    child_run_id: str | None = None


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


def _project(result: Any, node: PlanNode) -> dict[str, Any]:
    """A tool's result as a context update: the whole result under `output`, else its keys in writes."""
    target = node.body.get("output")
    if target:
        return {target: result}
    if isinstance(result, dict):
        return {k: v for k, v in result.items() if k in node.writes}
    return {}


async def call_tool(name: str, args: dict[str, Any]) -> Any:
    """Call a registered tool with validated arguments (sync tools run in a worker thread)."""
    spec = REGISTRY.get(name)
    if spec is None:
        raise NodeFailed(f"tool `{name}` is not registered (known: {', '.join(sorted(REGISTRY)) or 'none'})")
    try:
        if spec.is_async:
            return await spec.fn(**args)
        result = await asyncio.to_thread(spec.fn, **args)
        if inspect.isawaitable(result):
            result = await result
        return result
    except NodeFailed:
        raise
    except ValidationError as exc:  # validate_call checks the arguments before the tool runs
        raise NodeFailed(f"tool `{name}` rejected its arguments: {exc}") from exc


async def tool_body(node: PlanNode, context: dict[str, Any]) -> Effect:
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
    result = await call_tool(tool, args)
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


async def not_built_body(node: PlanNode, context: dict[str, Any]) -> Effect:
    """Node types whose engine part is not built yet fail loudly rather than pretend."""
    raise NodeFailed(
        f"`{node.type}` nodes cannot run yet in this version of Ergon (node `{node.id}`): "
        "human tasks are a separate piece of work"
    )


async def leaf_effect(node: PlanNode, context: dict[str, Any], services: Services, visit_id: str | None) -> Effect:
    """Run one leaf body (tool, interaction, agent, process) or routing-only node."""
    if node.type == "tool":
        return await tool_body(node, context)
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
    return await not_built_body(node, context)
