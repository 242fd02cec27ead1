"""Draw a Plan as Mermaid or Graphviz DOT text, optionally highlighting a run's route.

Both renderers build strings by hand: the dashboard passes DOT to ``st.graphviz_chart`` (which
renders in the browser), so no graphviz binary or Python package is needed.

Conventions, the same in both formats:

* **lanes** (``metadata.lane``) are subgraphs (DOT clusters); nodes without a lane sit outside.
  Inside a lane nodes are listed by ``metadata.order``. A **phase** is shown as a line of the
  node's label rather than a nested group: phases cut across lanes (intake happens in several
  lanes), and nesting would repeat the same phase box in every lane.
* **shapes** by node type: tool rectangle, interaction rounded, agent hexagon, condition
  diamond, foreach parallelogram, branch trapezium, process subroutine (DOT: component),
  human task rectangle in violet, final stadium (DOT: double circle). State machines get a small
  start dot pointing at ``initial``.
* **edge labels**: the transition's ``label``; else a compact rendering of its guard
  (``total_value > 50000``, ``legal_decision == "approve"``; JSON, truncated, when the rule is
  not a simple comparison); ``default`` for default branches; ``timeout``; ``user`` for an
  unlabelled user choice. Agent-triggered transitions are dashed.
* **highlight** (:class:`RouteHighlight`): visited nodes filled by status (completed green,
  failed red, running/paused amber, skipped grey), taken edges thick and green, the current node
  with a heavy outline.
* **ids**: Mermaid ids are ``n_<id>`` with non-word characters replaced (Mermaid reserves
  ``end`` and mis-parses ids starting with ``o``/``x`` after an arrow); DOT ids are quoted
  strings, so node ids are used as they are.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from compiler.plan import Plan, PlanEdge, PlanNode

STATUS_COLOURS: dict[str, tuple[str, str]] = {  # status → (fill, stroke)
    "completed": ("#c8e6c9", "#2e7d32"),
    "failed": ("#ffcdd2", "#c62828"),
    "running": ("#ffe082", "#ff8f00"),
    "paused": ("#ffe082", "#ff8f00"),
    "skipped": ("#e0e0e0", "#9e9e9e"),
}
TAKEN_COLOUR = "#2e7d32"
HUMAN_COLOURS = ("#ede7f6", "#5e35b1")
FINAL_COLOURS = ("#f5f5f5", "#424242")
GUARD_LIMIT = 48


@dataclass(frozen=True)
class RouteHighlight:
    """What a run did: node statuses, edges taken ``(source, target)``, the node it is at."""

    visited: dict[str, str] = field(default_factory=dict)
    taken: set[tuple[str, str]] | frozenset[tuple[str, str]] = field(default_factory=frozenset)
    current: str | None = None


# --------------------------------------------------------------------------------------------
# Guards as text

_INFIX = {"==": "==", "===": "==", "!=": "!=", "!==": "!=", ">": ">", ">=": ">=", "<": "<", "<=": "<=", "in": "in"}


class _NotSimple(Exception):
    pass


def _literal(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _expr(rule: Any, top: bool = True) -> str:
    if isinstance(rule, dict) and len(rule) == 1:
        op, args = next(iter(rule.items()))
        if op == "var":
            name = args[0] if isinstance(args, list) and args else args
            if not isinstance(name, (str, int)):
                raise _NotSimple
            return str(name)
        args = args if isinstance(args, list) else [args]
        if op in _INFIX and len(args) == 2:
            text = f"{_expr(args[0], False)} {_INFIX[op]} {_expr(args[1], False)}"
        elif op in ("<", "<=") and len(args) == 3:
            text = f"{_expr(args[0], False)} {op} {_expr(args[1], False)} {op} {_expr(args[2], False)}"
        elif op in ("and", "or") and args:
            text = f" {op} ".join(_expr(a, False) for a in args)
        elif op == "!" and len(args) == 1:
            return f"not {_expr(args[0], False)}"
        elif op == "!!" and len(args) == 1:
            return _expr(args[0], top)
        else:
            raise _NotSimple
        return text if top else f"({text})"
    if isinstance(rule, list) and not any(isinstance(v, (dict, list)) for v in rule):
        return _literal(rule)  # a literal list, e.g. the right side of `in`
    if isinstance(rule, (dict, list)):
        raise _NotSimple
    return _literal(rule)


def guard_text(rule: Any, limit: int = GUARD_LIMIT) -> str:
    """A short human rendering of a JSON Logic rule (JSON, truncated, when it is not simple)."""
    try:
        text = _expr(rule)
    except _NotSimple:
        text = json.dumps(rule, separators=(",", ":"), ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def edge_label(edge: PlanEdge) -> str | None:
    if edge.label:
        return edge.label
    if edge.kind == "default":
        return "default"
    if edge.kind == "timeout":
        return "timeout"
    if edge.guard is not None:
        return guard_text(edge.guard)
    if edge.trigger == "user":
        return "user"
    return None


def _label_lines(plan: Plan, node: PlanNode) -> list[str]:
    lines = [node.id]
    if node.title and node.title != node.id:
        lines.append(node.title)
    if node.phase:
        lines.append(f"phase: {node.phase}")
    if node.when is not None:
        lines.append(f"when: {guard_text(node.when)}")
    for rx in node.extras.get("when_regexp", []):
        lines.append(f"when: {rx.get('var')} ~ /{rx.get('pattern')}/")
    return lines


def _lanes(plan: Plan) -> tuple[dict[str, list[PlanNode]], list[PlanNode]]:
    """Nodes grouped by lane (ordered by metadata.order, then definition order), and the rest."""
    lanes: dict[str, list[PlanNode]] = {}
    free: list[PlanNode] = []
    for node in plan.nodes.values():
        (lanes.setdefault(node.lane, []) if node.lane else free).append(node)
    index = {nid: i for i, nid in enumerate(plan.nodes)}
    for nodes in lanes.values():
        nodes.sort(key=lambda n: (n.order if n.order is not None else float("inf"), index[n.id]))
    return lanes, free


# --------------------------------------------------------------------------------------------
# Mermaid

_MERMAID_SHAPES: dict[str, tuple[str, str]] = {
    "tool": ("[", "]"), "interaction": ("(", ")"), "agent": ("{{", "}}"), "condition": ("{", "}"),
    "foreach": ("[/", "/]"), "branch": ("[/", "\\]"), "process": ("[[", "]]"), "human_task": ("[", "]"),
    "final": ("([", "])"),
}


def _mm_text(text: str) -> str:
    text = text.replace("#", "#35;").replace('"', "#quot;").replace("<", "#lt;").replace(">", "#gt;").replace("|", "#124;")
    return text.replace("\n", " ")


class _Ids:
    """Stable, unique, syntax-safe ids."""

    def __init__(self, prefix: str):
        self.prefix = prefix
        self.map: dict[str, str] = {}
        self.used: set[str] = set()

    def __call__(self, key: str) -> str:
        if key not in self.map:
            base = self.prefix + re.sub(r"\W", "_", key)
            out, n = base, 1
            while out in self.used:
                n += 1
                out = f"{base}_{n}"
            self.used.add(out)
            self.map[key] = out
        return self.map[key]


def render_mermaid(plan: Plan, highlight: RouteHighlight | None = None) -> str:
    """A Mermaid ``flowchart`` of the plan (see the module docstring for the conventions)."""
    nid = _Ids("n_")
    lid = _Ids("lane_")
    out = ["flowchart TD", f"  %% {plan.name} ({plan.kind}, version {plan.version})"]

    def node_line(node: PlanNode, indent: str) -> str:
        left, right = _MERMAID_SHAPES.get(node.type, ("[", "]"))
        label = "<br/>".join(_mm_text(line) for line in _label_lines(plan, node))
        return f'{indent}{nid(node.id)}{left}"{label}"{right}'

    if plan.control == "state_machine" and plan.initial:
        out.append('  start__(("start"))')
    lanes, free = _lanes(plan)
    for lane, nodes in lanes.items():
        out.append(f'  subgraph {lid(lane)}["{_mm_text(lane)}"]')
        out.extend(node_line(n, "    ") for n in nodes)
        out.append("  end")
    out.extend(node_line(n, "  ") for n in free)

    links: list[tuple[str, str]] = []
    if plan.control == "state_machine" and plan.initial and plan.initial in plan.nodes:
        out.append(f"  start__ --> {nid(plan.initial)}")
        links.append(("", plan.initial))
    for e in plan.edges:
        if e.source not in plan.nodes or e.target not in plan.nodes:
            continue
        arrow = "-.->" if e.trigger == "agent" else "-->"
        label = edge_label(e)
        out.append(f'  {nid(e.source)} {arrow}{f"|{chr(34)}{_mm_text(label)}{chr(34)}|" if label else ""} {nid(e.target)}')
        links.append((e.source, e.target))

    out.append(f"  classDef human_task fill:{HUMAN_COLOURS[0]},stroke:{HUMAN_COLOURS[1]}")
    out.append(f"  classDef final fill:{FINAL_COLOURS[0]},stroke:{FINAL_COLOURS[1]}")
    out.append("  classDef start fill:#333333,stroke:#333333,color:#ffffff")
    if plan.control == "state_machine" and plan.initial:
        out.append("  class start__ start")
    classes: dict[str, list[str]] = {}
    visited = highlight.visited if highlight else {}
    for node in plan.nodes.values():
        status = visited.get(node.id)
        if status in STATUS_COLOURS:
            classes.setdefault(status, []).append(nid(node.id))
        elif node.type in ("human_task", "final"):
            classes.setdefault(node.type, []).append(nid(node.id))
    for status in STATUS_COLOURS:
        if status in classes:
            fill, stroke = STATUS_COLOURS[status]
            out.append(f"  classDef {status} fill:{fill},stroke:{stroke}")
    for cls, ids in classes.items():
        out.append(f"  class {','.join(ids)} {cls}")
    if highlight:
        for i, (src, dst) in enumerate(links):
            if (src, dst) in highlight.taken or (src == "" and dst in visited):
                out.append(f"  linkStyle {i} stroke:{TAKEN_COLOUR},stroke-width:3px")
        if highlight.current in plan.nodes:
            out.append(f"  style {nid(highlight.current)} stroke:#000000,stroke-width:4px")
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------------------------
# DOT

_DOT_SHAPES: dict[str, dict[str, str]] = {
    "tool": {"shape": "box"},
    "interaction": {"shape": "box", "style": "rounded,filled"},
    "agent": {"shape": "hexagon"},
    "condition": {"shape": "diamond"},
    "foreach": {"shape": "parallelogram"},
    "branch": {"shape": "trapezium"},
    "process": {"shape": "component"},
    "human_task": {"shape": "box", "fillcolor": HUMAN_COLOURS[0], "color": HUMAN_COLOURS[1]},
    "final": {"shape": "doublecircle", "fillcolor": FINAL_COLOURS[0], "color": FINAL_COLOURS[1]},
}


def _dq(text: str) -> str:
    """A DOT double-quoted string (backslashes, quotes and newlines escaped)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _attrs(attrs: dict[str, str]) -> str:
    return "[" + ", ".join(f"{k}={_dq(v)}" for k, v in attrs.items()) + "]"


def render_dot(plan: Plan, highlight: RouteHighlight | None = None, *, rankdir: str = "TB",
               max_size: tuple[float, float] | None = None) -> str:
    """A Graphviz ``digraph`` of the plan, valid without any graphviz software; ``rankdir="LR"``
    lays it out left to right (a wide page holds a long process that way), and ``max_size``
    (width, height in inches) shrinks a larger drawing to fit — a smaller one keeps its size."""
    visited = highlight.visited if highlight else {}
    size = f" size={_dq(f'{max_size[0]:g},{max_size[1]:g}')}," if max_size else ""
    out = [
        f"digraph {_dq(plan.name)} {{",
        f'  graph [rankdir={_dq(rankdir)},{size} fontname="Helvetica", labelloc="t", label={_dq(f"{plan.name} ({plan.kind}, version {plan.version})")}];',
        '  node [fontname="Helvetica", fontsize="11", shape="box", style="filled", fillcolor="#ffffff", color="#555555"];',
        '  edge [fontname="Helvetica", fontsize="10", color="#555555"];',
    ]

    def node_line(node: PlanNode, indent: str) -> str:
        attrs = {"label": "\n".join(_label_lines(plan, node))}
        attrs.update(_DOT_SHAPES.get(node.type, {}))
        status = visited.get(node.id)
        if status in STATUS_COLOURS:
            attrs["fillcolor"], attrs["color"] = STATUS_COLOURS[status]
        if highlight and highlight.current == node.id:
            attrs["penwidth"] = "3"
            attrs["style"] = attrs.get("style", "filled") + ",bold"
        return f"{indent}{_dq(node.id)} {_attrs(attrs)};"

    start = None
    if plan.control == "state_machine" and plan.initial in plan.nodes:
        start = "__start__"
        while start in plan.nodes:
            start += "_"
        out.append(f'  {_dq(start)} [shape="circle", label="", width="0.2", fillcolor="#333333", color="#333333"];')
    lanes, free = _lanes(plan)
    for i, (lane, nodes) in enumerate(lanes.items()):
        out.append(f"  subgraph {_dq(f'cluster_{i}_{lane}')} {{")
        out.append(f'    label={_dq(lane)}; style="rounded,dashed"; color="#999999";')
        out.extend(node_line(n, "    ") for n in nodes)
        out.append("  }")
    out.extend(node_line(n, "  ") for n in free)

    if start and plan.initial is not None:  # start is drawn only when the initial node is a node
        attrs = {"color": TAKEN_COLOUR, "penwidth": "2.5"} if plan.initial in visited else {}
        out.append(f"  {_dq(start)} -> {_dq(plan.initial)}{' ' + _attrs(attrs) if attrs else ''};")
    for e in plan.edges:
        if e.source not in plan.nodes or e.target not in plan.nodes:
            continue
        attrs = {}
        label = edge_label(e)
        if label:
            attrs["label"] = label
        if e.trigger == "agent":
            attrs["style"] = "dashed"
        if highlight and (e.source, e.target) in highlight.taken:
            attrs["color"] = TAKEN_COLOUR
            attrs["penwidth"] = "2.5"
        out.append(f"  {_dq(e.source)} -> {_dq(e.target)}{' ' + _attrs(attrs) if attrs else ''};")
    out.append("}")
    return "\n".join(out) + "\n"
