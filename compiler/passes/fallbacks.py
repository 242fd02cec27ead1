"""The `fallbacks` pass: a process node always has an exit to take when its work is done.

The engine leaves a node by the first ``auto`` transition whose guard holds (no guard: always),
after offering a person its open ``trigger: user`` exits; when nothing holds the run fails with
"no transition matched" (error kind ``definition``). A node whose exits all carry guards can
therefore fail a run that did nothing wrong, which the checker can see before any run does.

``no-fallback`` — a node (not ``final``, not ``condition``, not an agent picking its exit with
``_next_node``) whose ``auto`` and ``user`` transitions all carry a guard, unless the guards are
proven to cover every case. The fix is a last transition without ``guard``, the fallback the
engine takes when no guard before it holds (a process transition has no ``default:`` flag; that
is a ``condition`` node's arm). Proven complete, and so not reported:

* one guard is the negation of another (``G`` and ``{"!": G}``, ``==`` and ``!=`` over the same
  arguments, ``===`` and ``!==``);
* every guard reads one and the same field, and for each value that field can hold some guard
  holds (each guard is evaluated on each value). The values are known when the field is a
  required ``select`` (its ``options``) or a ``boolean`` of the node's human task that the node
  writes — the answer is copied into the context just before routing — or when
  ``context.schema`` closes the field (``enum``, ``const``, ``type: boolean``). The
  ``definite_assignment`` pass proves such a field set wherever a guard reads it, so it holds
  one of those values. The seed's review step, a human task routing on every option of its
  ``decision`` select, is this case.

A supervised run asks its supervisor at a node that matched no transition (the ``no_transition``
event: it may ``set_context`` and have the routing tried again, ``transition_to`` or
``retry_node``); only when it routes nothing does the run fail. So for a definition that declares
supervision — ``run_type: supervised`` (every run has a supervisor) or a ``metadata.supervisor``
policy (runs started with ``--supervised``) — ``no-fallback`` is a warning: the gap is the
supervisor's to handle, and a programmatic run of the definition still fails there. An inline
child definition is supervised when its process node says ``run_type: supervised`` (or, the node
silent on it, as the child says).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from compiler import guards as jl
from compiler.context_schema import allowed_values, field_schema
from compiler.errors import DocPath, Finding
from compiler.ir import AgentNode, ConditionNode, FinalNode, HumanTaskNode, ProcessDef, ProcessNode
from compiler.walk import iter_nodes, sure_writes

#: Operators whose result depends on more than the ``var`` reads they contain: a rule using them
#: is not judged by evaluating it on one field's values.
_OPAQUE_OPERATORS = frozenset({"missing", "missing_some", "val", jl.ARTIFACT_EXISTS})
#: Negated comparison → the comparison it negates.
_NEGATED = {"!=": "==", "!==": "==="}


def check(unit, ws) -> Iterator[Finding]:
    if isinstance(unit.defn, ProcessDef):
        yield from _definition(unit.defn, (), _declares_supervision(unit.defn))


def _declares_supervision(defn: ProcessDef) -> bool:
    return defn.run_type == "supervised" or isinstance((defn.metadata or {}).get("supervisor"), dict)


def _definition(defn: ProcessDef, base: DocPath, supervised: bool) -> Iterator[Finding]:
    for site in iter_nodes(defn, base):
        node = site.node
        if isinstance(node, ProcessNode) and node.process_definition is not None:
            child = node.process_definition
            own = ("run_type" in node.model_fields_set and node.run_type == "supervised") or (
                "run_type" not in node.model_fields_set and _declares_supervision(child))
            yield from _definition(child, (*site.path, "process_definition"), own)
        if site.parent is None:
            yield from _node(defn, site.id, node, site.path, supervised)


def _node(defn: ProcessDef, nid: str, node: Any, path: DocPath, supervised: bool) -> Iterator[Finding]:
    if isinstance(node, (FinalNode, ConditionNode)) or not node.transitions:
        return  # a condition has its own default check; a node without exits is a dead end
    if isinstance(node, AgentNode) and any(t.trigger == "agent" for t in node.transitions):
        return  # the agent picks its exit (`_next_node`); guards do not route it
    routed = [t for t in node.transitions if t.trigger in ("auto", "user")]
    if not routed or any(t.guard is None or t.guard is True for t in routed):
        return
    rules = [t.guard for t in routed if t.guard is not False]  # `guard: false` never holds
    if any(not isinstance(r, dict) or jl.check_rule(r) for r in rules):
        return  # a guard that is not a valid rule has its own error; fix that first
    if rules and (_complementary(rules) or _covers_field(defn, node, rules)):
        return
    count = f"its {len(routed)} guards" if len(routed) > 1 else "its guard"
    if supervised:
        message = (f"`{nid}` has no fallback exit: when none of {count} holds, a supervised run asks its "
                   "supervisor to route it, and a programmatic run fails (no transition matched)")
    else:
        message = f"`{nid}` has no fallback exit: when none of {count} holds, the run fails (no transition matched)"
    hint = ("add a last transition without `guard` (`- {to: <node>}`), taken when no guard above it holds; "
            "or make the guards cover every value of the one field they test (an `enum`, a boolean, a required select)")
    yield Finding("no-fallback", (*path, "transitions"), message, hint=hint, at_key=True,
                  severity="warning" if supervised else "error")


# --------------------------------------------------------------------------------------------
# proofs that the guards cover every case


def _polarity(rule: Any) -> tuple[bool, str]:
    """``(positive, text of the rule with its outer negations taken off)``."""
    positive = True
    while isinstance(rule, dict) and len(rule) == 1:
        (op, args), = rule.items()
        if op in ("!", "!!"):
            inner = args[0] if isinstance(args, list) and len(args) == 1 else args
            if isinstance(inner, list):
                break
            positive = positive if op == "!!" else not positive
            rule = inner
        elif op in _NEGATED:
            positive = not positive
            rule = {_NEGATED[op]: args}
            break
        else:
            break
    return positive, json.dumps(rule, sort_keys=True, default=str)


def _complementary(rules: list[Any]) -> bool:
    """Some rule is the negation of another: one of the two holds whatever the context."""
    seen: dict[str, set[bool]] = {}
    for rule in rules:
        positive, text = _polarity(rule)
        seen.setdefault(text, set()).add(positive)
    return any(len(p) == 2 for p in seen.values())


def _covers_field(defn: ProcessDef, node: Any, rules: list[Any]) -> bool:
    """Every rule reads one field only, the same one, and on each of its values some rule holds."""
    fields: set[str] = set()
    for rule in rules:
        paths = _var_paths(rule)
        if paths is None:
            return False
        fields |= paths
    if len(fields) != 1:
        return False
    (field,) = fields
    values = _values(defn, node, field)
    if values is None:
        return False
    try:
        return all(any(jl.evaluate(rule, _data(field, value)) for rule in rules) for value in values)
    except Exception:  # noqa: BLE001 - a rule that cannot be evaluated proves nothing
        return False


def _var_paths(rule: Any) -> set[str] | None:
    """The literal ``var`` paths a rule reads; None when it reads in a way this proof does not
    follow (a computed path, a ``var`` default, ``missing``, an artifact)."""
    out: set[str] = set()
    stack = [rule]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, dict):
            if len(item) != 1:
                return None
            (op, args), = item.items()
            if op in _OPAQUE_OPERATORS:
                return None
            if op == "var":
                path = args[0] if isinstance(args, list) and len(args) == 1 else args
                if not isinstance(path, str) or not path or any(s.isdigit() or not s for s in path.split(".")):
                    return None
                out.add(path)
            else:
                stack.append(args)
    return out


def _values(defn: ProcessDef, node: Any, field: str) -> list[Any] | None:
    """Every value ``field`` can hold when ``node`` routes, when that is a closed set."""
    if isinstance(node, HumanTaskNode) and field in sure_writes(node):
        for f in node.task.fields:
            if f.name == field:
                if f.type == "select" and f.options:  # required, or given a default: it arrives
                    return [*f.options, *([f.default] if f.default is not None else [])]
                if f.type == "boolean":
                    return [True, False]
                return None
    schema = field_schema(defn.context, field)
    values = allowed_values(schema)
    if values is not None:
        return values
    if isinstance(schema, dict) and schema.get("type") == "boolean":
        return [True, False]
    return None


def _data(field: str, value: Any) -> dict[str, Any]:
    """A context holding ``value`` at the dotted path ``field``."""
    data: dict[str, Any] = {}
    here = data
    *parents, last = field.split(".")
    for seg in parents:
        here = here.setdefault(seg, {})
    here[last] = value
    return data
