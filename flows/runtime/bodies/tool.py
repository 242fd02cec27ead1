"""The `tool` node: call a registered tool with rendered arguments; its result becomes the update.

Also the two envelopes that are not tool calls: a fixed ``config.context_update`` (rendered over
the context) and ``set_context`` (the engine applies its ``updates`` as the node's writes).

Lowered workflow-DSL steps may carry ``fetch`` and ``projection`` extras: the fetch runs first
and is bound as ``fetched`` for the step's params, the projection is applied to the tool's result
before ``output`` receives it (:mod:`flows.runtime.dsl`). Input keys listed in the ``verbatim``
extra (a ``runJavascriptCode`` step's ``code``) are passed as written, not rendered.
"""

from __future__ import annotations

from typing import Any

from compiler.ir import ToolNode
from compiler.plan import PlanNode
from compiler.templates import render_value
from flows.runtime.effects import Effect, Services
from flows.runtime.errors import InputRejected, NodeFailed, with_visit_input
from flows.tools.context import CURRENT, ToolContext
from flows.tools.errors import ToolArgumentError, UnknownTool
from flows.tools.invoke import invoke


def _project(result: Any, node: PlanNode) -> dict[str, Any]:
    """A tool's result as a context update: the whole result under `output`, else its keys in writes."""
    target = node.body_as(ToolNode).output
    if target:
        return {target: result}
    if isinstance(result, dict):
        return {k: v for k, v in result.items() if k in node.writes}
    return {}


async def call_tool(name: str, args: dict[str, Any], services: Services | None = None, node: PlanNode | None = None,
                    visit_id: str | None = None) -> Any:
    """Call a tool the way agents do (:func:`flows.tools.invoke.invoke`: validated arguments,
    recorded call), with this visit as the tool context."""
    token = CURRENT.set(ToolContext(run_id=services.run_id if services else None, visit_id=visit_id,
                                    node_id=node.id if node else None,
                                    started_by=services.started_by if services else None, record_calls=False,
                                    resolve_interaction=services.resolve_interaction if services else None,
                                    environments=services.environments if services else None))
    try:
        return await invoke(name, args)
    except (UnknownTool, ToolArgumentError) as exc:  # not the tool's own failure: never retried
        raise InputRejected(str(exc)) from exc
    finally:
        CURRENT.reset(token)


async def run(node: PlanNode, context: dict[str, Any], services: Services | None = None,
                    visit_id: str | None = None) -> Effect:
    body = node.body_as(ToolNode)
    fixed = body.config.context_update if body.config else None
    tool = body.tool
    if fixed is not None and not tool:
        update = render_value(fixed, context)
        return Effect(update=update, output=update)
    fetch_spec = node.fetch_spec()
    if fetch_spec:
        from flows.runtime import dsl

        context = {**context, "fetched": dsl.fetch(render_value(fetch_spec, context), node.id)}
    verbatim = node.verbatim_inputs()  # e.g. JavaScript code, whose `${…}` are its own
    raw = body.input or {}
    args = {**render_value({k: v for k, v in raw.items() if k not in verbatim}, context),
            **{k: v for k, v in raw.items() if k in verbatim}}
    if tool == "set_context":
        updates = args.get("updates") if isinstance(args, dict) else None
        if not isinstance(updates, dict):
            raise NodeFailed(f"`set_context` on `{node.id}` needs input `{{updates: {{...}}}}`", kind="definition")
        return Effect(update=updates, output=updates, input=args)
    if not tool:
        return Effect(input=args)
    try:
        result = await call_tool(tool, args, services, node, visit_id)
    except Exception as exc:  # what the tool received is the first thing to read about its failure
        with_visit_input(exc, args)
        raise
    projection = node.projection()
    if projection:
        from flows.runtime import dsl

        result = dsl.project(result, projection, node.id)
    update = _project(result, node)
    if fixed:
        update = {**render_value(fixed, context), **update}
    return Effect(update=update, output=result, input=args)
