"""The `guards` pass: JSON Logic rules are valid and compare fields with values they can hold.

Rules checked: transition guards and condition-branch ``when`` in processes, node ``when`` in
pipelines (the other control style's fields are reported by the graph-shape pass and skipped
here), in the definition and in every inline child process.

* `guard-invalid` — datalogic's checker: unknown operator, wrong argument count, an object that
  is not an operator call; an ``artifact_exists`` whose argument is not an artifact key. A guard that is a bare string or number is always (or never) true,
  which is never what the author meant, so it is reported too.
* `enum-value` — ``==, !=, ===, !==, in`` between a field and a literal, where the field's schema
  has an ``enum`` (or a human task's ``select`` field has ``options``): the literal must be one
  of them, otherwise the guard is constant and its branch dead or always taken.
* `unknown-field` — a guard reads a field the context schema does not declare (only when the
  schema declares properties).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from compiler import guards as jl
from compiler.context_schema import allowed_values, declared_properties, field_schema, same_value
from compiler.errors import DocPath, Finding, choices_hint, did_you_mean
from compiler.ir import ConditionNode, HumanTaskNode, PipelineDef, ProcessDef
from compiler.walk import iter_definitions

_SHAPE_HINT = 'a rule is a mapping with one operator, e.g. `{"==": [{"var": "field"}, "value"]}`'


def guard_sites(defn: ProcessDef | PipelineDef, path: DocPath = ()) -> Iterator[tuple[str, DocPath, Any]]:
    """``(node id, document path, rule)`` of every guard of one definition (not inline children)."""
    for nid, node in defn.nodes.items():
        base = (*path, "nodes", nid)
        if isinstance(defn, ProcessDef):
            for i, t in enumerate(node.transitions):
                if t.guard is not None:
                    yield nid, (*base, "transitions", i, "guard"), t.guard
            if isinstance(node, ConditionNode):
                for i, b in enumerate(node.branches):
                    if b.when is not None:
                        yield nid, (*base, "branches", i, "when"), b.when
        elif node.when is not None:
            yield nid, (*base, "when"), node.when


def check(unit, ws) -> Iterator[Finding]:
    if not isinstance(unit.defn, (ProcessDef, PipelineDef)):
        return
    for defn, path in iter_definitions(unit.defn):
        yield from _check_definition(defn, path)


def _check_definition(defn: ProcessDef | PipelineDef, path: DocPath) -> Iterator[Finding]:
    props = declared_properties(defn.context)
    enums: dict[str, list[Any] | None] = {}  # field path → allowed values, looked up once
    for nid, gpath, rule in guard_sites(defn, path):
        if isinstance(rule, bool):
            continue
        if not isinstance(rule, dict):
            yield Finding(
                "guard-invalid", gpath,
                f"a guard must be a JSON Logic rule, not a {type(rule).__name__} ({json.dumps(rule, default=str)[:40]} is a constant)",
                hint=_SHAPE_HINT,
            )
            continue
        info = jl.analyse(rule)
        bad = False
        for pointer, code, message, severity in info.problems:
            bad = bad or severity == "error"
            yield Finding("guard-invalid", (*gpath, *jl.pointer_to_path(pointer, rule)), message,
                          hint=_problem_hint(code, pointer, rule), severity="error" if severity == "error" else "warning")
        if bad:
            continue
        unknown_reported: set[str] = set()
        if props is not None:
            for at, name, _needed in info.sites:
                if name not in props and name not in unknown_reported:
                    unknown_reported.add(name)
                    yield Finding("unknown-field", (*gpath, *at), f"the guard reads `{name}`, which `context.schema` does not declare",
                                  hint=choices_hint(name, props, what="declared fields"))
        if info.comparisons:
            yield from _enum_checks(defn, defn.nodes[nid], gpath, info.comparisons, unknown_reported, enums)


def _problem_hint(code: str, pointer: str, rule: Any) -> str | None:
    """Name the valid choices: the operators, or the argument count an operator takes."""
    sub = rule
    for seg in jl.pointer_to_path(pointer, rule):
        sub = sub[seg] if isinstance(sub, (dict, list)) else None
    op = next(iter(sub)) if isinstance(sub, dict) and len(sub) == 1 else None
    if code == "UnknownOperator" and op is not None:
        operators = jl.OPERATORS | {jl.ARTIFACT_EXISTS}
        return did_you_mean(op, operators) or (
            "operators are " + ", ".join(f"`{o}`" for o in sorted(operators))
            + " (the JSON Logic spec operators and Vertesia's `artifact_exists`)"
        )
    if code == "ArtifactKey":
        return 'name the artifact by its key: `{"artifact_exists": {"var": "out/report.md"}}` or `{"artifact_exists": "out/report.md"}`'
    if code == "ArgumentCount" and op in jl.OPERATOR_ARITY:
        lo, hi = jl.OPERATOR_ARITY[op]
        wanted = f"exactly {lo}" if lo == hi else f"{lo} to {hi}" if hi is not None else f"at least {lo}"
        return f"`{op}` takes {wanted} argument{'s' if hi != 1 else ''}, given as a list: " + '`{"%s": [a, b]}`' % op
    if code in ("NotAnOperator", "Unparsable"):
        return _SHAPE_HINT
    return None


def _enum_checks(defn, node, gpath: DocPath, comparisons: tuple, skip: set[str],
                 enums: dict[str, list[Any] | None]) -> Iterator[Finding]:
    """`enum-value` for comparisons of enum fields / select answers against literals."""
    # A human task's transitions run right after the answer is copied into the context, so a
    # `select` field's options are the values the guard can see.
    options: dict[str, list[Any]] = {}
    if isinstance(node, HumanTaskNode) and len(gpath) >= 3 and gpath[-3] == "transitions":
        for f in node.task.fields:
            if f.type == "select" and f.options:
                options[f.name] = list(f.options)
    for at, _op, field, literals, _cmp in comparisons:
        if field.split(".", 1)[0] in skip:
            continue
        if field not in enums:
            enums[field] = allowed_values(field_schema(defn.context, field))
        schema_values = enums[field]
        for literal in literals:
            if schema_values is not None and not any(same_value(literal, v) for v in schema_values):
                yield _enum_finding(gpath, at, field, literal, schema_values, "the enum of")
            elif field in options and not any(same_value(literal, v) for v in options[field]):
                yield _enum_finding(gpath, at, field, literal, options[field], "the options of the task field")


def _enum_finding(gpath: DocPath, at: tuple, field: str, literal: Any, values: list[Any], where: str) -> Finding:
    shown = [json.dumps(v) for v in values]
    hint = did_you_mean(json.dumps(literal), shown) if isinstance(literal, str) else None
    return Finding(
        "enum-value", (*gpath, *at),
        f"`{field}` is compared with {json.dumps(literal)}, which is not in {where} `{field}`: the comparison never matches",
        hint=hint or f"valid values are: {', '.join(shown)}",
    )
