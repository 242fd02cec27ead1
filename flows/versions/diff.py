"""A readable structural diff between two versions of a definition.

Runnable definitions are compared as compiled :class:`~compiler.plan.Plan`\\ s, so a process, a
pipeline, a template and a workflow all diff the same way and the diff speaks of what runs:

* **nodes** added, removed, or changed — each change a field path inside the node with its old
  and new value (``task.fields[0].options: ["a", "b"] → ["a", "b", "c"]``);
* **context** fields added, removed or retyped (a changed JSON-Schema ``type``), other changes
  to a field's schema, and changes of ``context.initial``;
* **transitions** (every edge: transitions, condition branches, timeouts, ``needs``) added or
  removed — a changed guard shows as the old edge removed and the new one added;
* **definition** fields outside those (description, triggers, budget, environment, …).

Other kinds (interaction, environment, form), and versions that no longer compile, are compared
field by field on their content. Pure functions of data: nothing here reads the store.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

#: Node body keys shown in "transitions" instead of as node field changes.
_EDGE_KEYS = frozenset({"transitions", "needs"})
# Plan fields shown in their own sections, or derived from the nodes (finals, entries, halts).
_PLAN_OWN = frozenset({"nodes", "edges", "context_schema", "context_initial", "input_schema", "version", "source_file",
                       "name", "finals", "entries", "halt_points"})


@dataclass
class FieldChange:
    """One changed value at ``path`` (``old``/``new`` absent = the key did not exist)."""

    path: str
    old: Any = None
    new: Any = None


@dataclass
class StructuralDiff:
    """What changed between two versions; :meth:`empty` when nothing did."""

    nodes_added: dict[str, str] = field(default_factory=dict)  # id → type
    nodes_removed: dict[str, str] = field(default_factory=dict)
    nodes_changed: dict[str, list[FieldChange]] = field(default_factory=dict)
    context_added: dict[str, Any] = field(default_factory=dict)  # field → type
    context_removed: dict[str, Any] = field(default_factory=dict)
    context_retyped: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    context_changed: list[FieldChange] = field(default_factory=list)
    transitions_added: list[str] = field(default_factory=list)
    transitions_removed: list[str] = field(default_factory=list)
    definition_changed: list[FieldChange] = field(default_factory=list)
    note: str | None = None

    def empty(self) -> bool:
        return not any(v for k, v in asdict(self).items() if k != "note")

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def field_changes(old: Any, new: Any, path: str = "") -> list[FieldChange]:
    """Leaf-level differences: dicts by key, lists of equal length item by item, else the value."""
    if old == new:
        return []
    if isinstance(old, dict) and isinstance(new, dict):
        out: list[FieldChange] = []
        for key in list(old) + [k for k in new if k not in old]:
            sub = f"{path}.{key}" if path else str(key)
            if key not in new:
                out.append(FieldChange(sub, old[key], None))
            elif key not in old:
                out.append(FieldChange(sub, None, new[key]))
            else:
                out.extend(field_changes(old[key], new[key], sub))
        return out
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        out = []
        for i, (a, b) in enumerate(zip(old, new, strict=True)):
            out.extend(field_changes(a, b, f"{path}[{i}]"))
        return out
    return [FieldChange(path or "(whole)", old, new)]


def schema_type(prop: Any) -> Any:
    """The JSON-Schema type of a context field (``$ref``/``enum`` fallbacks for untyped ones)."""
    if not isinstance(prop, dict):
        return None
    if "type" in prop:
        return prop["type"]
    return prop.get("$ref") or ("enum" if "enum" in prop else None)


def _edge_label(edge: Any) -> str:
    text = f"{edge.source} → {edge.target}"
    extras = []
    if edge.kind not in ("transition", "needs"):
        extras.append(edge.kind)
    if edge.guard is not None:
        extras.append(f"guard {json.dumps(edge.guard, sort_keys=True)}")
    if edge.trigger != "auto":
        extras.append(f"trigger {edge.trigger}")
    if edge.kind == "needs":
        extras.append("needs")
    return text + (f" [{', '.join(extras)}]" if extras else "")


def _node_view(node: Any) -> dict[str, Any]:
    body = {k: v for k, v in node.body_json().items() if k not in _EDGE_KEYS}
    if node.when is not None:
        body.setdefault("when", node.when)
    return body


def diff_plans(old: Any, new: Any) -> StructuralDiff:
    """The structural diff of two compiled Plans."""
    d = StructuralDiff()
    for nid, node in new.nodes.items():
        if nid not in old.nodes:
            d.nodes_added[nid] = node.type
    for nid, node in old.nodes.items():
        if nid not in new.nodes:
            d.nodes_removed[nid] = node.type
        else:
            changes = field_changes(_node_view(node), _node_view(new.nodes[nid]))
            if changes:
                d.nodes_changed[nid] = changes
    old_props = (old.context_schema or {}).get("properties", {}) or {}
    new_props = (new.context_schema or {}).get("properties", {}) or {}
    for name, prop in new_props.items():
        if name not in old_props:
            d.context_added[name] = schema_type(prop)
    for name, prop in old_props.items():
        if name not in new_props:
            d.context_removed[name] = schema_type(prop)
        elif schema_type(prop) != schema_type(new_props[name]):
            d.context_retyped[name] = (schema_type(prop), schema_type(new_props[name]))
        else:
            d.context_changed.extend(field_changes(prop, new_props[name], f"schema.{name}"))
    rest_old = {k: v for k, v in (old.context_schema or {}).items() if k != "properties"}
    rest_new = {k: v for k, v in (new.context_schema or {}).items() if k != "properties"}
    d.context_changed.extend(field_changes(rest_old, rest_new, "schema"))
    d.context_changed.extend(field_changes(old.context_initial, new.context_initial, "initial"))
    old_edges = {_edge_label(e) for e in old.edges}
    new_edges = {_edge_label(e) for e in new.edges}
    d.transitions_added = sorted(new_edges - old_edges)
    d.transitions_removed = sorted(old_edges - new_edges)
    old_top = {k: v for k, v in old.to_json().items() if k not in _PLAN_OWN}
    new_top = {k: v for k, v in new.to_json().items() if k not in _PLAN_OWN}
    d.definition_changed = field_changes(old_top, new_top)
    return d


def diff_contents(old: Any, new: Any, *, note: str | None = None) -> StructuralDiff:
    """Field-by-field diff of raw contents (kinds without a Plan, or content that does not compile)."""
    return StructuralDiff(definition_changed=field_changes(old, new), note=note)


def _value(v: Any, limit: int = 160) -> str:
    text = json.dumps(v, ensure_ascii=False, sort_keys=True, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _type(t: Any) -> str:
    return t if isinstance(t, str) else _value(t)


def _change_line(c: FieldChange) -> str:
    if c.old is None:
        return f"{c.path}: added {_value(c.new)}"
    if c.new is None:
        return f"{c.path}: removed (was {_value(c.old)})"
    return f"{c.path}: {_value(c.old)} → {_value(c.new)}"


def render(d: StructuralDiff, title: str) -> str:
    """The diff as plain lines (``+`` added, ``-`` removed, ``~`` changed)."""
    lines = [title]
    if d.note:
        lines.append(f"  ({d.note})")
    if d.empty():
        lines.append("  no differences")
        return "\n".join(lines)
    if d.nodes_added or d.nodes_removed or d.nodes_changed:
        lines.append("nodes:")
        lines += [f"  + {n} ({t})" for n, t in d.nodes_added.items()]
        lines += [f"  - {n} ({t})" for n, t in d.nodes_removed.items()]
        for n, changes in d.nodes_changed.items():
            lines.append(f"  ~ {n}")
            lines += [f"      {_change_line(c)}" for c in changes]
    if d.context_added or d.context_removed or d.context_retyped or d.context_changed:
        lines.append("context:")
        lines += [f"  + {n}: {_type(t)}" for n, t in d.context_added.items()]
        lines += [f"  - {n}: {_type(t)}" for n, t in d.context_removed.items()]
        lines += [f"  ~ {n}: type {_type(a)} → {_type(b)}" for n, (a, b) in d.context_retyped.items()]
        lines += [f"  ~ {_change_line(c)}" for c in d.context_changed]
    if d.transitions_added or d.transitions_removed:
        lines.append("transitions:")
        lines += [f"  + {e}" for e in d.transitions_added]
        lines += [f"  - {e}" for e in d.transitions_removed]
    if d.definition_changed:
        lines.append("definition:")
        lines += [f"  ~ {_change_line(c)}" for c in d.definition_changed]
    return "\n".join(lines)
