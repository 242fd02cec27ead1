"""The `call_cycles` pass: a definition must not run itself, directly or through others.

A process node (or a workflow's child step) that leads back to the definition it belongs to
nests runs without end: each level waits for the next, until the run dies of its depth. The
workspace's call graph is built from every runnable definition's calls — process nodes at any
depth (foreach/branch children and inline ``process_definition`` bodies included) and
workflow steps of ``type: workflow`` — and each definition on a cycle gets ``process-cycle`` at
its own call that starts the cycle, naming the whole chain.

Repeating work is what a transition back to an earlier node is for; the hint says so.
Unknown names are the references pass's business: here they simply have no calls.
"""

from __future__ import annotations

from collections.abc import Iterator

from compiler.errors import DocPath, Finding
from compiler.ir import IRModel, PipelineDef, ProcessDef, ProcessNode, WorkflowDef, definition_name
from compiler.walk import iter_definitions, iter_nodes

Call = tuple[str, DocPath]  # (callee name, where the call is written)


def check(unit, ws) -> Iterator[Finding]:
    defn = unit.defn
    if not isinstance(defn, (ProcessDef, PipelineDef, WorkflowDef)):
        return
    me = definition_name(defn)
    graph = _call_graph(ws)
    for callee, path in _calls(defn):
        chain = _path_back(callee, me, graph)
        if chain is not None:
            names = " → ".join(f"`{n}`" for n in [me, *chain])
            yield Finding("process-cycle", path, f"`{me}` runs itself: {names}, and so on without end",
                          hint="to repeat work, add a transition back to an earlier node (with a guard that ends the loop)")


def _calls(defn: IRModel) -> list[Call]:
    """The definitions ``defn`` starts, each with the path of its call."""
    if isinstance(defn, WorkflowDef):
        return [(step.name, ("steps", i, "name")) for i, step in enumerate(defn.steps) if step.type == "workflow"]
    calls: list[Call] = []
    for graph, base in iter_definitions(defn):  # type: ignore[arg-type]
        for site in iter_nodes(graph, base):
            node = site.node
            if isinstance(node, ProcessNode) and node.process_definition is None and node.process is not None:
                calls.append((node.process, (*site.path, "process")))
    return calls


def _call_graph(ws) -> dict[str, list[str]]:
    """Callee names of every runnable definition of the workspace, by name (cached per workspace)."""
    cached = ws.memo.get("call_graph")
    if cached is not None:
        return cached
    graph: dict[str, list[str]] = {}
    for unit in ws.units:
        if isinstance(unit.defn, (ProcessDef, PipelineDef, WorkflowDef)) and unit.name not in graph:
            graph[unit.name] = [name for name, _ in _calls(unit.defn)]
    ws.memo["call_graph"] = graph
    return graph


def _path_back(start: str, target: str, graph: dict[str, list[str]]) -> list[str] | None:
    """A chain of calls from ``start`` to ``target`` (both included), or None."""
    stack: list[tuple[str, list[str]]] = [(start, [start])]
    seen: set[str] = set()
    while stack:
        name, chain = stack.pop()
        if name == target:
            return chain
        if name in seen:
            continue
        seen.add(name)
        for callee in reversed(graph.get(name, [])):
            stack.append((callee, [*chain, callee]))
    return None
