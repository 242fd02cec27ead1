"""The `definite_assignment` pass: every field a node reads is set on every path to it.

A template rendered with ``StrictUndefined`` fails on a missing field, and a guard reading one
silently compares ``null``: both are bugs that show up only on the rare path that skips the
writer. This pass proves the absence of such paths, like a compiler's definite-assignment check.

**Processes** (state machines, loops allowed) — a forward *must* data-flow analysis over the
:class:`~compiler.graph.ControlGraph`::

    IN[initial] = required inputs ∪ context.initial keys ∪ properties with a `default`
    OUT[n]      = IN[n] ∪ writes(n)
    IN[n]       = ⋂ OUT[p] over the edges p → n     (a human task's `on_timeout` edge carries
                                                     IN[p]: the answer never came)

solved to the greatest fixpoint (non-initial nodes start from "everything"), with sets as
Python ints used as bitsets, sweeping nodes in BFS order until nothing changes (loops need one
extra sweep each). A node's templates and ``input`` mappings (and a foreach's array) are read on
entry, against IN[n]; its outgoing guards and condition ``when``s are read on exit, against
OUT[n], so a human task's guard may read its own answer.

**Pipelines** (DAGs) — a node runs after everything it needs (transitively), and a node whose
``when`` is false skips everything that needs it, so ``IN[n] = initial ∪ writes of all
ancestors``; computed as one OR per ``needs`` edge in topological order.

**Nested fields** — a template access ``x.a.b`` fails when ``b`` is absent from ``x.a``. A
property the schema does not list in its object's ``required`` may be absent from any valid
value, and nothing else can promise it: a write is checked against the same schema, and an input
replaces a ``context.initial`` value whole. So every unguarded access of a declared optional
property (through declared object properties, from the top-level field down) is `maybe-unset`
whatever the path; ``| default(...)`` and ``is defined`` guard it as they guard a top-level field,
and so does a truth test (``{% if x.a %}``, ``x.a or 200``, ``not x.a``), where the runtime takes
an absent key for false (:class:`compiler.templates.ErgonUndefined`).
A ``foreach`` path (``a.b.items``) through an optional property is `maybe-unset` too.

**Fan-outs** — a completed ``foreach`` or ``branch`` has set for certain only its ``collect``
target. Its children's fields reach the context only from the items that succeeded: with
``failure_policy: collect_errors`` a node completes with failed items, and a ``foreach`` over an
empty array runs no item at all. So ``writes(n)`` above counts a fan-out's child fields only for
a ``fail_fast`` branch (every arm ran and succeeded, or the node failed); a reader after any
other fan-out needs the field set another way (``context.initial``, a required input).

Reads are the template reads that fail when absent (not under ``| default`` or
``is defined``), the guard ``var``s without a default (``missing`` tests are fine), and the
first segment of a ``foreach`` path; a foreach child's ``as`` name is in scope for the child.
A field the schema does not declare is `unknown-field` instead (for templates and foreach paths;
the guards pass reports guards). Each field is reported once per reading node, with a path that
shows how the reader is reached without the field being set. Unreachable nodes are skipped (the
graph-shape pass reports them); inline child processes are checked as definitions of their own.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator

from compiler import guards as jl
from compiler.context_schema import declared_properties, initially_set
from compiler.errors import DocPath, Finding, choices_hint
from compiler.graph import ControlGraph, pipeline_graph, process_graph
from compiler.ir import BranchNode, ForeachNode, PipelineDef, ProcessDef
from compiler.passes.guards import guard_sites
from compiler.passes.templates import located, name_line
from compiler.templates import TemplateSite, analyse, node_templates
from compiler.walk import iter_definitions, sure_writes

_HINT = "set it in context.initial, make it a required input, or write it on every path"


def _maybe_writers(defn: ProcessDef | PipelineDef, field: str) -> list[str]:
    """The fan-outs that write ``field`` only when their items succeed."""
    return [nid for nid, node in defn.nodes.items()
            if isinstance(node, (ForeachNode, BranchNode)) and field in node.writes and field not in sure_writes(node)]


def _fanout_note(defn: ProcessDef | PipelineDef, field: str) -> str:
    maybe = _maybe_writers(defn, field)
    if not maybe:
        return ""
    node = defn.nodes[maybe[0]]
    reasons = (["its array may be empty"] if isinstance(node, ForeachNode) else []) + \
        (["its items may fail (failure_policy: collect_errors)"] if getattr(node, "failure_policy", None) == "collect_errors" else [])
    return f" (`{maybe[0]}` sets it only through items that succeed, and {' and '.join(reasons)})"


def _fanout_hint(defn: ProcessDef | PipelineDef, field: str) -> str | None:
    maybe = _maybe_writers(defn, field)
    if not maybe:
        return None
    first = maybe[0]
    if isinstance(defn.nodes[first], BranchNode):
        return (f"give `{field}` a value in context.initial for when the branch that sets it fails, or use "
                f"`failure_policy: fail_fast` on `{first}`")
    return f"give `{field}` a value in context.initial for when no item sets it, or read it from `{first}`'s collected results"


class _Read:
    """One read of a field by a node: where, and whether it happens on entry or exit."""

    __slots__ = ("node", "field", "path", "text", "required", "exit", "guard")

    def __init__(self, node: str, field: str, path: DocPath, *, text: str | None = None,
                 required: bool = True, exit: bool = False, guard: bool = False):
        self.node, self.field, self.path, self.text = node, field, path, text
        self.required, self.exit, self.guard = required, exit, guard


def check(unit, ws) -> Iterator[Finding]:
    if not isinstance(unit.defn, (ProcessDef, PipelineDef)):
        return
    for defn, path in iter_definitions(unit.defn):
        yield from _check_definition(unit, defn, path)


def node_reads(defn: ProcessDef | PipelineDef, path: DocPath = (),
               nested: list[tuple[str, TemplateSite]] | None = None) -> list[_Read]:
    """Every read of every node of one definition, in document order (templates with nested
    accesses are appended to ``nested`` when given)."""
    reads: list[_Read] = []
    for nid, node in defn.nodes.items():
        base = (*path, "nodes", nid)
        if isinstance(node, ForeachNode) and isinstance(node.foreach, str) and node.foreach:
            first = node.foreach.split(".", 1)[0].split("[", 1)[0]
            if first:
                reads.append(_Read(nid, first, (*base, "foreach")))
        for tpath, text, scope in node_templates(node, base):
            info = analyse(text)
            if nested is not None and info.paths:
                nested.append((nid, (tpath, text, scope)))
            for name in sorted(info.reads - scope):
                reads.append(_Read(nid, name, tpath, text=text, required=name in info.required))
    is_process = isinstance(defn, ProcessDef)
    for nid, gpath, rule in guard_sites(defn, path):
        for at, name, needed in jl.analyse(rule).sites:
            # a process guard is evaluated when leaving the node; a pipeline `when` before it runs
            reads.append(_Read(nid, name, (*gpath, *at), required=needed, exit=is_process, guard=True))
    return reads


def optional_parent(schema: dict, access: tuple[str, ...]) -> str | None:
    """The dotted parent of ``access`` when its last segment is a declared, non-required property
    of the object schema reached through ``properties`` (else None: required, or no claim)."""
    node: object = schema
    for segment in access[:-1]:
        props = node.get("properties") if isinstance(node, dict) else None
        if not isinstance(props, dict) or segment not in props:
            return None
        node = props[segment]
    if not isinstance(node, dict):
        return None
    props = node.get("properties")
    if not isinstance(props, dict) or access[-1] not in props:
        return None
    required = node.get("required")
    if isinstance(required, list) and access[-1] in required:
        return None
    return ".".join(access[:-1])


def nested_findings(unit, schema: dict, sites) -> Iterator[Finding]:
    """`maybe-unset` for each unguarded access of an optional nested property in ``sites``
    (``(node label, template site)`` pairs), once per node and path."""
    seen: set[tuple[str, str]] = set()
    for label, (tpath, text, scope) in sites:
        for access in sorted(analyse(text).paths):
            if access[0] in scope:
                continue
            parent = optional_parent(schema, access)
            if parent is None:
                continue
            dotted = ".".join(access)
            if (label, dotted) in seen:
                continue
            seen.add((label, dotted))
            last = access[-1]
            line = name_line(text, dotted) if dotted in text else name_line(text, access[0])
            yield located(unit, "maybe-unset", tpath,
                          f"`{dotted}` may be unset here: `{last}` is an optional property of `{parent}` in context.schema, "
                          f"so a valid `{parent}` can omit it", line=line,
                          hint=f"guard it (`{{% if {dotted} is defined %}}…{{% endif %}}` or `{dotted} | default(…)`), "
                          f"or list `{last}` in the `required` of `{parent}`")


def _foreach_findings(defn: ProcessDef | PipelineDef, path: DocPath) -> Iterator[Finding]:
    """A foreach path through an optional nested property fails the node when it is absent."""
    schema = defn.context.schema_
    for nid, node in defn.nodes.items():
        if not (isinstance(node, ForeachNode) and isinstance(node.foreach, str) and "." in node.foreach):
            continue
        segments: list[str] = []
        for segment in node.foreach.split("."):
            if not segment or segment.isdigit() or "[" in segment:
                break
            segments.append(segment)
            parent = optional_parent(schema, tuple(segments)) if len(segments) > 1 else None
            if parent is not None:
                dotted = ".".join(segments)
                yield Finding("maybe-unset", (*path, "nodes", nid, "foreach"),
                              f"`{dotted}` may be unset here: `{segment}` is an optional property of `{parent}` "
                              f"in context.schema, so a valid `{parent}` can omit it",
                              hint=f"list `{segment}` in the `required` of `{parent}`, or iterate over a field "
                              "that is always set")
                break


def _check_definition(unit, defn: ProcessDef | PipelineDef, path: DocPath) -> Iterator[Finding]:
    nested: list[tuple[str, TemplateSite]] = []
    reads = node_reads(defn, path, nested)
    if declared_properties(defn.context) is not None:
        yield from nested_findings(unit, defn.context.schema_, nested)
        yield from _foreach_findings(defn, path)
    if not reads:
        return
    props = declared_properties(defn.context)
    findings: list[Finding] = []
    known: list[_Read] = []
    seen_unknown: set[tuple[str, str]] = set()
    for r in reads:
        if props is not None and r.field not in props:
            if not r.guard and (r.node, r.field) not in seen_unknown:  # guards: the guards pass
                seen_unknown.add((r.node, r.field))
                findings.append(_at(unit, r, "unknown-field",
                                    f"`{r.field}` is read here but `context.schema` does not declare it",
                                    choices_hint(r.field, props, what="declared fields")))
            continue
        if r.required:
            known.append(r)
    if known:
        flow = _ProcessFlow(defn) if isinstance(defn, ProcessDef) else _PipelineFlow(defn)
        reported: set[tuple[str, str]] = set()
        for r in known:
            key = (r.node, r.field)
            if key in reported or flow.is_set(r):
                continue
            reported.add(key)
            findings.append(_at(unit, r, "maybe-unset", f"`{r.field}` may be unset here: {flow.why(r)}", flow.hint(r)))
    yield from findings


def _at(unit, r: _Read, code: str, message: str, hint: str | None) -> Finding:
    if r.text is not None:
        return located(unit, code, r.path, message, line=name_line(r.text, r.field), hint=hint)
    return Finding(code, r.path, message, hint=hint)


class _Bits:
    """Field name ↔ bit position; sets of fields are ints."""

    def __init__(self) -> None:
        self.index: dict[str, int] = {}

    def mask(self, names) -> int:
        out = 0
        for name in names:
            bit = self.index.get(name)
            if bit is None:
                bit = self.index[name] = len(self.index)
            out |= 1 << bit
        return out

    def has(self, mask: int, name: str) -> bool:
        bit = self.index.get(name)
        return bit is not None and bool(mask >> bit & 1)


class _ProcessFlow:
    """Must-assigned fields at entry (IN) and exit (OUT) of each reachable node."""

    def __init__(self, defn: ProcessDef):
        self.defn = defn
        self.graph: ControlGraph = process_graph(defn)
        self.initial = defn.initial
        self.bits = _Bits()
        self.init_names = initially_set(defn.context)
        init = self.bits.mask(self.init_names)
        self.writes = {nid: self.bits.mask(sure_writes(node)) for nid, node in defn.nodes.items()}
        order = self._bfs_order()
        self.reachable = set(order)
        # incoming (source, carries OUT?) per reachable node
        incoming: dict[str, list[tuple[str, bool]]] = {n: [] for n in order}
        for n in order:
            for e in self.graph.succ.get(n, ()):
                if e.target in incoming:
                    incoming[e.target].append((n, e.kind != "timeout"))
        full = -1  # all bits set: "every field", the top of the lattice
        self.IN: dict[str, int] = {n: full for n in order}
        self.OUT: dict[str, int] = {n: full for n in order}
        if self.initial in self.IN:
            self.IN[self.initial] = init
            self.OUT[self.initial] = init | self.writes[self.initial]
        changed = True
        while changed:
            changed = False
            for n in order:
                new = init if n == self.initial else full
                for src, carries_out in incoming[n]:
                    new &= self.OUT[src] if carries_out else self.IN[src]
                if new != self.IN[n]:
                    self.IN[n] = new
                    self.OUT[n] = new | self.writes[n]
                    changed = True

    def _bfs_order(self) -> list[str]:
        if self.initial not in self.graph.succ:
            return []
        seen = {self.initial}
        order = [self.initial]
        queue = deque(order)
        while queue:
            n = queue.popleft()
            for e in self.graph.succ[n]:
                if e.target in self.graph.succ and e.target not in seen:
                    seen.add(e.target)
                    order.append(e.target)
                    queue.append(e.target)
        return order

    def is_set(self, r: _Read) -> bool:
        if r.node not in self.reachable:
            return True  # unreachable: reported by the graph-shape pass, nothing to prove here
        return self.bits.has(self.OUT[r.node] if r.exit else self.IN[r.node], r.field)

    def witness(self, r: _Read) -> list[str] | None:
        """A shortest path from `initial` to the reader along which nothing writes the field."""
        writers = {nid for nid, node in self.defn.nodes.items() if r.field in sure_writes(node)}
        prev: dict[str, str | None] = {self.initial: None}
        queue = deque([self.initial])
        while queue:
            n = queue.popleft()
            if n == r.node:
                out = [n]
                while prev[out[-1]] is not None:
                    out.append(prev[out[-1]])  # type: ignore[arg-type]
                return out[::-1]
            for e in self.graph.succ.get(n, ()):
                # leaving a writer sets the field, except by a human task's timeout exit
                if n in writers and e.kind != "timeout":
                    continue
                if e.target in self.graph.succ and e.target not in prev:
                    prev[e.target] = n
                    queue.append(e.target)
        return None

    def why(self, r: _Read) -> str:
        path = self.witness(r)
        note = _fanout_note(self.defn, r.field)
        if path is None:
            return "some path to this node does not set it" + note
        if len(path) == 1 and not r.exit:
            return f"the run starts at `{path[0]}` and nothing has set it yet" + note
        return f"the path {' → '.join(path)} never sets it" + note

    def hint(self, r: _Read) -> str:
        return _fanout_hint(self.defn, r.field) or _HINT


class _PipelineFlow:
    """Fields set before each pipeline node: the initial set plus every ancestor's writes."""

    def __init__(self, defn: PipelineDef):
        self.defn = defn
        graph = pipeline_graph(defn)
        self.bits = _Bits()
        init = self.bits.mask(initially_set(defn.context))
        writes = {nid: self.bits.mask(sure_writes(node)) for nid, node in defn.nodes.items()}
        pred = graph.pred()
        before: dict[str, int] = {}
        for n in graph.topological_order():  # nodes on a `needs` cycle are left out (cycle pass)
            acc = 0
            for e in pred[n]:
                acc |= before.get(e.source, 0) | writes[e.source]
            before[n] = acc
        self.IN = {n: init | acc for n, acc in before.items()}

    def is_set(self, r: _Read) -> bool:
        if r.node not in self.IN:
            return True
        return self.bits.has(self.IN[r.node], r.field)

    def _other_writers(self, r: _Read) -> list[str]:
        return [nid for nid, node in self.defn.nodes.items() if r.field in sure_writes(node) and nid != r.node]

    def why(self, r: _Read) -> str:
        note = _fanout_note(self.defn, r.field)
        if note:
            return "it may not be set when this node runs" + note
        writers = self._other_writers(r)
        if not writers:
            return "no node writes it and it is not set when the run starts"
        names = ", ".join(f"`{w}`" for w in writers[:3])
        return f"`{r.node}` does not need (directly or indirectly) any node that writes it ({names})"

    def hint(self, r: _Read) -> str:
        fanout = _fanout_hint(self.defn, r.field)
        if fanout:
            return fanout
        writers = self._other_writers(r)
        if writers:
            return f"add `{writers[0]}` to `nodes.{r.node}.needs`, or set it in context.initial or make it a required input"
        return _HINT


def set_at_completion(defn: ProcessDef | PipelineDef, outcomes: list[str] | None = None) -> set[str]:
    """The fields surely set when a run of ``defn`` completes (at one of ``outcomes``, when given):
    for a process, those set on every path into its final nodes; for a pipeline, those set when
    it starts and those written by nodes that always run (no ``when`` on them or anything they
    need — a skipped node writes nothing)."""
    if isinstance(defn, ProcessDef):
        flow = _ProcessFlow(defn)
        finals = [nid for nid, node in defn.nodes.items()
                  if node.type == "final" and nid in flow.reachable and (not outcomes or nid in outcomes)]
        names = set(flow.bits.index) | set(declared_properties(defn.context) or {})
        return {name for name in names if all(flow.bits.has(flow.IN[f], name) for f in finals)}
    sure = set(initially_set(defn.context))
    always: dict[str, bool] = {}

    def runs(nid: str, seen: frozenset[str] = frozenset()) -> bool:
        if nid not in always:
            node = defn.nodes.get(nid)
            always[nid] = node is not None and node.when is None and nid not in seen \
                and all(runs(need, seen | {nid}) for need in node.needs)
        return always[nid]

    for nid, node in defn.nodes.items():
        if runs(nid):
            sure |= set(sure_writes(node))
    return sure
