"""Control-flow graphs of processes and pipelines, on plain id maps.

Passes and the lowering never walk the IR's transitions themselves: they ask for a
:class:`ControlGraph`, which is just ``dict[NodeId, list[Edge]]`` plus the entry point, so the
graph algorithms (reachability, cycles, dominance-like data flow) are testable on plain data.

For a **process**, edges are transitions, condition branches and the `on_timeout` exit of a
human task; the entry is ``initial``. For a **pipeline**, an edge ``a → b`` means ``b`` needs
``a``; the entries are the nodes with no needs.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Set
from dataclasses import dataclass, field

from compiler.errors import DocPath
from compiler.ir import ConditionNode, HumanTaskNode, PipelineDef, ProcessDef


@dataclass(frozen=True, slots=True)
class Edge:
    """One possible move from ``source`` to ``target``."""

    source: str
    target: str
    kind: str  # "transition" | "branch" | "default" | "timeout" | "needs"
    path: DocPath  # where the edge is written in the document (for diagnostics)
    guard: object = None
    trigger: str = "auto"
    label: str | None = None
    order: int = 0


@dataclass
class ControlGraph:
    """Successor lists plus entry points; ``dag`` tells pipelines from state machines."""

    entries: list[str]
    succ: dict[str, list[Edge]] = field(default_factory=dict)
    dag: bool = False

    @property
    def nodes(self) -> list[str]:
        return list(self.succ)

    def pred(self) -> dict[str, list[Edge]]:
        out: dict[str, list[Edge]] = {n: [] for n in self.succ}
        for edges in self.succ.values():
            for e in edges:
                if e.target in out:
                    out[e.target].append(e)
        return out

    def reachable(self, starts: Iterable[str] | None = None) -> set[str]:
        seen: set[str] = set()
        queue = deque(s for s in (self.entries if starts is None else starts) if s in self.succ)
        seen.update(queue)
        while queue:
            n = queue.popleft()
            for e in self.succ.get(n, ()):
                if e.target in self.succ and e.target not in seen:
                    seen.add(e.target)
                    queue.append(e.target)
        return seen

    def path_between(self, start: str, goal: str, *, avoid: Set[str] = frozenset()) -> list[str] | None:
        """Shortest node path from ``start`` to ``goal`` not passing *through* ``avoid`` (BFS)."""
        if start not in self.succ:
            return None
        prev: dict[str, str | None] = {start: None}
        queue = deque([start])
        while queue:
            n = queue.popleft()
            if n == goal:
                out = [n]
                while prev[out[-1]] is not None:
                    out.append(prev[out[-1]])  # type: ignore[arg-type]
                return out[::-1]
            if n in avoid and n != start:
                continue
            for e in self.succ.get(n, ()):
                if e.target in self.succ and e.target not in prev:
                    prev[e.target] = n
                    queue.append(e.target)
        return None

    def find_cycle(self) -> list[str] | None:
        """One cycle as a node list (first node repeated at the end), or None. Iterative DFS."""
        color: dict[str, int] = {n: 0 for n in self.succ}
        for root in self.succ:
            if color[root]:
                continue
            stack: list[tuple[str, int]] = [(root, 0)]
            trail: list[str] = [root]
            color[root] = 1
            while stack:
                node, i = stack[-1]
                edges = self.succ[node]
                if i < len(edges):
                    stack[-1] = (node, i + 1)
                    nxt = edges[i].target
                    if nxt not in color:
                        continue
                    if color[nxt] == 1:
                        return trail[trail.index(nxt):] + [nxt]
                    if color[nxt] == 0:
                        color[nxt] = 1
                        stack.append((nxt, 0))
                        trail.append(nxt)
                else:
                    color[node] = 2
                    stack.pop()
                    trail.pop()
        return None

    def ancestors(self) -> dict[str, set[str]]:
        """For a DAG: every node's set of (transitive) predecessors. Undefined on cycles."""
        order = self.topological_order()
        pred = self.pred()
        anc: dict[str, set[str]] = {}
        for n in order:
            s: set[str] = set()
            for e in pred[n]:
                s.add(e.source)
                s |= anc.get(e.source, set())
            anc[n] = s
        return anc

    def topological_order(self) -> list[str]:
        """Kahn's order; nodes on cycles are left out."""
        indeg = {n: 0 for n in self.succ}
        for edges in self.succ.values():
            for e in edges:
                if e.target in indeg:
                    indeg[e.target] += 1
        queue = deque(n for n, d in indeg.items() if d == 0)
        out: list[str] = []
        while queue:
            n = queue.popleft()
            out.append(n)
            for e in self.succ[n]:
                if e.target in indeg:
                    indeg[e.target] -= 1
                    if indeg[e.target] == 0:
                        queue.append(e.target)
        return out


def process_graph(defn: ProcessDef) -> ControlGraph:
    """Edges of a state machine, in the order the engine tries them."""
    succ: dict[str, list[Edge]] = {}
    for nid, node in defn.nodes.items():
        edges: list[Edge] = []
        for i, t in enumerate(node.transitions):
            edges.append(Edge(nid, t.to, "transition", ("nodes", nid, "transitions", i, "to"), t.guard, t.trigger, t.label, i))
        if isinstance(node, ConditionNode):
            for i, b in enumerate(node.branches):
                edges.append(Edge(nid, b.to, "default" if b.default else "branch", ("nodes", nid, "branches", i, "to"),
                                  None if b.default else b.when, "auto", b.label, i))
        if isinstance(node, HumanTaskNode) and node.on_timeout:
            edges.append(Edge(nid, node.on_timeout, "timeout", ("nodes", nid, "on_timeout"), None, "auto", "timeout", len(edges)))
        succ[nid] = edges
    return ControlGraph(entries=[defn.initial], succ=succ, dag=False)


def pipeline_graph(defn: PipelineDef) -> ControlGraph:
    """``a → b`` when ``b`` needs ``a``; entries are the nodes with no needs."""
    succ: dict[str, list[Edge]] = {nid: [] for nid in defn.nodes}
    for nid, node in defn.nodes.items():
        for i, need in enumerate(node.needs):
            if need in succ:
                succ[need].append(Edge(need, nid, "needs", ("nodes", nid, "needs", i), None, "auto", None, i))
    entries = [nid for nid, node in defn.nodes.items() if not node.needs]
    return ControlGraph(entries=entries, succ=succ, dag=True)


def control_graph(defn: ProcessDef | PipelineDef) -> ControlGraph:
    return process_graph(defn) if isinstance(defn, ProcessDef) else pipeline_graph(defn)
