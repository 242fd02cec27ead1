"""The `write_races` pass: nodes that may run at the same time must not write the same field.

Three places run work concurrently, and in each the last writer would win at random:

* **pipeline nodes** with no order between them (neither needs the other, even indirectly);
* **branch arms** of a ``branch`` whose writes reach the context: all of them without
  ``collect``, and with ``collect`` those the branch node itself declares in ``writes`` (the
  rest are kept apart in the envelopes);
* **foreach items** whose body's writes reach the context in the same way, when
  ``max_concurrency`` is not 1 (every item writes the same fields).

(The runtime applies a child's update for exactly those fields: :mod:`flows.runtime.engine`.)

For pipelines the "is ordered before" relation is an ancestor bitset per node (one int, bit =
topological index), so checking a field's writers costs one AND per writer, not a pair loop:
each writer is compared at once with every earlier writer of the field. Each racing writer is
reported once, at its ``writes`` entry, naming the first writer it races with.
"""

from __future__ import annotations

from collections.abc import Iterator

from compiler.errors import DocPath, Finding
from compiler.graph import pipeline_graph
from compiler.ir import BranchNode, ForeachNode, PipelineDef, ProcessDef
from compiler.walk import iter_definitions


def check(unit, ws) -> Iterator[Finding]:
    if not isinstance(unit.defn, (ProcessDef, PipelineDef)):
        return
    for defn, path in iter_definitions(unit.defn):
        if isinstance(defn, PipelineDef):
            yield from _pipeline_races(defn, path)
        for nid, node in defn.nodes.items():
            base = (*path, "nodes", nid)
            if isinstance(node, BranchNode):
                yield from _branch_races(nid, node, base)
            elif isinstance(node, ForeachNode):
                yield from _foreach_races(nid, node, base)


def _pipeline_races(defn: PipelineDef, path: DocPath) -> Iterator[Finding]:
    graph = pipeline_graph(defn)
    order = graph.topological_order()  # nodes on a cycle are left out (the cycle pass reports it)
    position = {n: i for i, n in enumerate(order)}
    pred = graph.pred()
    anc: dict[str, int] = {}
    for n in order:
        acc = 0
        for e in pred[n]:
            acc |= anc[e.source] | (1 << position[e.source])
        anc[n] = acc
    seen_writers: dict[str, int] = {}  # field → bitset of writers already visited
    for n in order:
        node = defn.nodes[n]
        for i, field in enumerate(node.writes):
            earlier = seen_writers.get(field, 0)
            racing = earlier & ~anc[n]
            if racing:
                other = order[(racing & -racing).bit_length() - 1]
                yield Finding(
                    "write-race", (*path, "nodes", n, "writes", i),
                    f"`{other}` and `{n}` both write `{field}` and may run at the same time "
                    "(neither needs the other): the result depends on which finishes last",
                    hint=f"add `{other}` to `nodes.{n}.needs` (or the reverse), or let one of them write a different field",
                )
            seen_writers[field] = earlier | (1 << position[n])


def _reaching(node: BranchNode | ForeachNode, writes: list[str]) -> set[str]:
    """The child fields that reach the context (see the module docstring)."""
    return set(writes) if node.collect is None else set(writes) & set(node.writes)


def _branch_races(nid: str, node: BranchNode, base: DocPath) -> Iterator[Finding]:
    first_writer: dict[str, str] = {}
    for a, arm in enumerate(node.branches):
        reaching = _reaching(node, arm.node.writes)
        for i, field in enumerate(arm.node.writes):
            if field not in reaching:
                continue
            if field in first_writer and first_writer[field] != arm.id:
                yield Finding(
                    "write-race", (*base, "branches", a, "node", "writes", i),
                    f"branches `{first_writer[field]}` and `{arm.id}` of `{nid}` both write `{field}` and run at the same time",
                    hint="let the branches write different fields, or keep only the collected envelopes "
                    "(`collect`, without the field in the branch node's `writes`)",
                )
            else:
                first_writer.setdefault(field, arm.id)


def _foreach_races(nid: str, node: ForeachNode, base: DocPath) -> Iterator[Finding]:
    writes = [w for w in node.node.writes if w in _reaching(node, node.node.writes)]
    if not writes or node.max_concurrency == 1:
        return
    fields = ", ".join(f"`{w}`" for w in writes)
    limit = "all at once" if node.max_concurrency is None else f"{node.max_concurrency} at a time"
    yield Finding(
        "write-race", (*base, "node", "writes"),
        f"every item of `{nid}` writes {fields}, and items run {limit}: "
        "each item overwrites the others' result",
        hint=f"add `collect: <field>` to `{nid}` to keep one result per item, or set `max_concurrency: 1`",
    )
