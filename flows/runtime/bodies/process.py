"""The `process` node: run a sub-process (by name, pinned version, or inline) and take its result.

The child runs as a sub-run of its own (:attr:`Services.run_child`); ``returns`` picks what comes
back: ``from`` a path of ``{context, outcome, run_id}``, ``context`` a list of the child's fields,
or, by default, ``{outcome, context}`` under the node's one write. ``run_type: supervised`` gives
the child run a supervisor of its own (:mod:`flows.runtime.supervision`).
"""

from __future__ import annotations

from typing import Any

from compiler.ir import ProcessNode, Returns
from compiler.plan import PlanNode
from compiler.templates import render_value
from flows.runtime.context import get_path
from flows.runtime.effects import Effect, Services
from flows.runtime.errors import NodeFailed


async def run(node: PlanNode, context: dict[str, Any], services: Services, visit_id: str | None) -> Effect:
    body = node.body_as(ProcessNode)
    child = node.child_plan
    if child is None:
        if body.process is None:  # the checks refuse a process node with neither
            raise NodeFailed(f"`{node.id}` names no process and has no inline `process_definition`", kind="definition")
        child = services.resolve_plan(body.process, body.process_version)
    inputs = render_value(body.input or {}, context)
    # `run_type` on the node decides the child's mode; unset, the child definition's own does
    run_type = body.run_type if "run_type" in body.model_fields_set else None
    result = await services.run_child(child, inputs, visit_id, run_type)
    if result.status != "completed":
        # the child's own failure says whose fault it was; a cancelled child was stopped by someone
        kind = result.error_kind if result.status == "failed" else "world"
        raise NodeFailed(f"sub-process `{child.name}` ended {result.status}: {result.error or result.outcome}",
                         kind=kind or "internal")
    returns = body.returns or Returns()
    final_state = {"context": result.context, "outcome": result.outcome, "run_id": result.run_id}
    value: Any
    if returns.from_:
        try:
            value = get_path(final_state, returns.from_)
        except KeyError as exc:  # the child completed without setting what `returns` names
            raise NodeFailed(f"sub-process `{child.name}` completed without `{returns.from_}` for `returns.from`: "
                             f"{exc.args[0]}", kind="definition") from exc
    elif returns.context:
        value = {k: result.context.get(k) for k in returns.context}
    else:
        value = {"outcome": result.outcome, "context": result.context}
    if returns.context and not returns.from_:
        update = {k: v for k, v in value.items() if k in node.writes}
    elif len(node.writes) == 1:
        update = {node.writes[0]: value}
    else:
        update = {k: v for k, v in value.items() if k in node.writes} if isinstance(value, dict) else {}
    return Effect(update=update, output=value, input=inputs, child_run_id=result.run_id)
