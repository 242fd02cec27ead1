"""The `process` node: run a sub-process (by name, pinned version, or inline) and take its result.

The child runs as a sub-run of its own (:attr:`Services.run_child`); ``returns`` picks what comes
back: ``from`` a path of ``{context, outcome, run_id}``, ``context`` a list of the child's fields,
or, by default, ``{outcome, context}`` under the node's one write.
"""

from __future__ import annotations

from typing import Any

from compiler.plan import PlanNode
from compiler.templates import render_value
from flows.runtime.context import get_path
from flows.runtime.effects import Effect, Services
from flows.runtime.errors import NodeFailed


async def run(node: PlanNode, context: dict[str, Any], services: Services, visit_id: str | None) -> Effect:
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
