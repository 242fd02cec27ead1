"""The `graph_shape` pass: does the control graph of a process or pipeline hold together?

For a **process** (a state machine) every target must exist, every node must be reachable from
``initial``, every non-final node needs a way out, final nodes have none, condition nodes have
exactly one ``default: true`` arm, and agent-triggered exits sit on agent nodes. For a
**pipeline** (a DAG) every ``needs`` must name a node and the ``needs`` must not form a cycle.
Each style's control fields are refused in the other (``transitions`` in a pipeline, ``needs`` /
``when`` in a process): the runtime would silently ignore them.

Inline child definitions (``process_definition``) are graphs of their own and are checked the
same way. Fan-out children (foreach/branch bodies) do not route at all; the ``authoring`` pass
reports routing written on them, so this pass leaves them alone.

Settings only a process acts on are refused in a pipeline too (``wrong-control``): a pipeline
run is never supervised (``ergon run --supervised`` refuses it) and the operator controls
(``ergon runs skip``...) steer only a process, so ``metadata.supervisor`` and ``skippable`` would
do nothing there, nor would ``metadata.max_visits``, the bound of a process's loops (a pipeline
runs each node once).

A process node whose transitions all carry guards, with no unguarded fallback, is the
``fallbacks`` pass's business: it needs the guards and the context schema to tell whether the
guards cover every case.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator

from compiler.errors import Finding, choices_hint
from compiler.graph import pipeline_graph, process_graph
from compiler.ir import AgentNode, ConditionNode, FinalNode, HumanTaskNode, PipelineDef, ProcessDef
from compiler.walk import iter_definitions, written


def check(unit, ws) -> Iterator[Finding]:
    if not isinstance(unit.defn, (ProcessDef, PipelineDef)):
        return
    for defn, path in iter_definitions(unit.defn):
        if isinstance(defn, ProcessDef):
            yield from _process(defn, path)
        else:
            yield from _pipeline(defn, path)


# --------------------------------------------------------------------------------------------
# processes


def _process(defn: ProcessDef, base: tuple) -> Iterator[Finding]:
    ids = list(defn.nodes)
    graph = process_graph(defn)
    if defn.initial not in defn.nodes:
        yield Finding("unknown-target", (*base, "initial"), f"`initial` names no node: `{defn.initial}`",
                      hint=choices_hint(defn.initial, ids, what="nodes"))
    for nid, edges in graph.succ.items():
        for edge in edges:
            if edge.target not in defn.nodes:
                yield Finding("unknown-target", (*base, *edge.path), f"`{nid}` goes to `{edge.target}`, which is not a node",
                              hint=choices_hint(edge.target, ids, what="nodes"))
    for nid, node in defn.nodes.items():
        npath = (*base, "nodes", nid)
        yield from _exits(nid, node, npath, bool(graph.succ[nid]))
        yield from _process_only(nid, node, npath)
        if isinstance(node, ConditionNode):
            yield from _condition(nid, node, npath)
    yield from _unreachable(defn, graph, base)


def _unreachable(defn: ProcessDef, graph, base: tuple) -> Iterator[Finding]:
    """Nodes no path from `initial` reaches.

    A misspelt target already has its own diagnostic; the node it was meant to name (the
    did-you-mean guess) counts as reached so that one typo does not also report the whole
    tail of the process as unreachable.
    """
    ids = list(defn.nodes)
    starts = [defn.initial] if defn.initial in defn.nodes else _guesses(defn.initial, ids)
    if not starts:  # nothing sensible to start from; `initial` is already reported
        return
    for edges in graph.succ.values():
        for edge in edges:
            if edge.target not in defn.nodes:
                starts += _guesses(edge.target, ids)
    reached = graph.reachable(starts)
    for nid in ids:
        if nid not in reached:
            yield Finding("unreachable-node", (*base, "nodes", nid), f"no path from `initial` (`{defn.initial}`) reaches `{nid}`",
                          hint="add a transition to it, or remove the node", at_key=True)


def _guesses(word: str, ids: list[str]) -> list[str]:
    # the same closeness the did-you-mean hint uses
    return difflib.get_close_matches(word, ids, n=1, cutoff=0.6)


def _exits(nid: str, node, npath: tuple, has_exit: bool) -> Iterator[Finding]:
    """Final nodes end the run; every other node must be able to leave."""
    if isinstance(node, FinalNode):
        if node.transitions:
            yield Finding("final-has-exit", (*npath, "transitions"), f"final node `{nid}` declares transitions",
                          hint="entering a final node ends the run; remove the transitions or change the node's type",
                          at_key=True)
    elif not has_exit:
        yield Finding("dead-end", npath, f"`{nid}` is not a final node and has no way out",
                      hint="add `transitions:` (e.g. `- to: done`) or make it `type: final`", at_key=True)


def _process_only(nid: str, node, npath: tuple) -> Iterator[Finding]:
    """Pipeline fields written on a process node, and agent exits on a node that is not an agent."""
    for field in ("needs", "when"):
        if written(node, field):
            yield Finding("wrong-control", (*npath, field), f"`{field}` is a pipeline field; a process routes with `transitions`",
                          hint="use `transitions:` with a `guard:` in a process, or make the definition `kind: pipeline`",
                          at_key=True)
    if not isinstance(node, AgentNode):
        for i, t in enumerate(node.transitions):
            if t.trigger == "agent":
                yield Finding("agent-transition", (*npath, "transitions", i, "trigger"),
                              f"`trigger: agent` on `{nid}`, a {node.type} node: only an agent can pick its exit",
                              hint="use `trigger: auto` with a `guard`, or `trigger: user`")


def _condition(nid: str, node: ConditionNode, npath: tuple) -> Iterator[Finding]:
    """Exactly one `default: true` arm, and the default arm is unconditional."""
    defaults = [i for i, b in enumerate(node.branches) if b.default]
    if not defaults:
        yield Finding("condition-no-default", (*npath, "branches"), f"condition `{nid}` has no `default: true` branch",
                      hint="add a fallback arm such as `- {to: <node>, default: true}`; without it a run that "
                      "matches no branch fails", at_key=True)
    for i in defaults[1:]:
        yield Finding("bad-value", (*npath, "branches", i, "default"), f"condition `{nid}` has more than one default branch",
                      hint=f"only one arm may be `default: true` (the first is branch {defaults[0]})")
    for i in defaults:
        if node.branches[i].when is not None:
            yield Finding("bad-value", (*npath, "branches", i, "when"), "the default branch also has a `when` rule",
                          hint="the default arm is taken when no other arm passes; move the rule to its own arm or drop it")


# --------------------------------------------------------------------------------------------
# pipelines


def _pipeline(defn: PipelineDef, base: tuple) -> Iterator[Finding]:
    ids = list(defn.nodes)
    yield from _process_settings(defn, base)
    for nid, node in defn.nodes.items():
        npath = (*base, "nodes", nid)
        for i, need in enumerate(node.needs):
            if need not in defn.nodes:
                yield Finding("unknown-need", (*npath, "needs", i), f"`{nid}` needs `{need}`, which is not a node",
                              hint=choices_hint(need, [n for n in ids if n != nid], what="nodes"))
        yield from _pipeline_only(nid, node, npath)
    cycle = pipeline_graph(defn).find_cycle()
    if cycle:
        first, second = cycle[0], cycle[1]
        # point at the `needs` entry that closes the loop: `second` needs `first`
        index = defn.nodes[second].needs.index(first)
        yield Finding("cycle", (*base, "nodes", second, "needs", index),
                      f"the `needs` form a cycle: {' → '.join(cycle)}",
                      hint="a pipeline is a DAG: remove one of these `needs`, or use a process for a loop")


#: What a pipeline-level ``metadata`` key does in a process, and what to do instead in a pipeline.
_PROCESS_METADATA = {
    "supervisor": ("a supervisor policy, and a pipeline never runs supervised (`ergon run --supervised` refuses it)",
                   "supervision applies to processes: turn the pipeline into a process (its nodes routed with "
                   "`transitions`) to run it supervised, or drop `metadata.supervisor`"),
    "max_visits": ("the bound of a process's loops: a pipeline runs each node once",
                   "drop `metadata.max_visits`; bound a pipeline's spending with `budget`"),
}


def _supervision_hint(setting: str) -> str:
    """What to do with a supervision setting found on a pipeline node."""
    return (f"supervision applies to processes: turn the pipeline into a process (its nodes routed with "
            f"`transitions`) for a supervisor or an operator to act on the node, or drop `{setting}` "
            "(a node that should not always run takes a `when:` rule)")


def _process_settings(defn: PipelineDef, base: tuple) -> Iterator[Finding]:
    """``metadata`` keys of a process that nothing reads in a pipeline."""
    metadata = defn.metadata if isinstance(defn.metadata, dict) else {}
    for key, (what, hint) in _PROCESS_METADATA.items():
        if key in metadata:
            yield Finding("wrong-control", (*base, "metadata", key),
                          f"`metadata.{key}` is {what}", hint=hint, at_key=True)


def _pipeline_only(nid: str, node, npath: tuple) -> Iterator[Finding]:
    """Process routing, and process supervision settings, written on a pipeline node."""
    if node.skippable:
        yield Finding("wrong-control", (*npath, "skippable"),
                      f"`skippable` on `{nid}`: only a supervised process run or an operator skips a node, and a "
                      "pipeline has neither", hint=_supervision_hint("skippable"), at_key=True)
    if node.metadata is not None and node.metadata.supervisor is not None:
        yield Finding("wrong-control", (*npath, "metadata", "supervisor"),
                      f"`metadata.supervisor` on `{nid}`: a pipeline never runs supervised",
                      hint=_supervision_hint("metadata.supervisor"),
                      at_key=True)
    if node.transitions:
        yield Finding("wrong-control", (*npath, "transitions"), "`transitions` is a process field; a pipeline orders nodes with `needs`",
                      hint="list the nodes this one waits for in `needs:`, and use `when:` to skip it", at_key=True)
    if isinstance(node, ConditionNode):
        yield Finding("wrong-control", (*npath, "type"), "a condition node routes a process; a pipeline has no routing",
                      hint="put a `when:` rule on each node that should run only in some cases")
    if isinstance(node, HumanTaskNode) and node.on_timeout:
        yield Finding("wrong-control", (*npath, "on_timeout"), "`on_timeout` is a process exit; a pipeline has no routing",
                      hint="drop `on_timeout` (an expired task fails the node) or use a process")

