"""The `template_values` pass: a template does to a value only what the value's type allows.

Two things a template can do that fail for every value of some JSON type, which the runtime then
fails as a ``definition`` error (:func:`compiler.templates.render_value`, strict undefined):

* a **filter** on a value it cannot work on: ``{{ ratio | length }}`` when ``ratio`` is a number
  (Python's ``len`` of a float). :data:`FAILS_ON` says, per filter, the JSON types on which it
  fails for *every* value (measured on the sandboxed environment the runtime renders with);
* a **member** of a value that has none: ``{{ meta.field }}`` when ``meta`` is a string.

When the declared types of the value a template reads include such a type, the failure is
certain for such a value before any run: ``wrong-type``. Checked in the templates of process and
pipeline nodes (against the definition's ``context.schema``; an inline child's against its own);
a workflow step's ``params`` are checked by :mod:`compiler.passes.lowered_kinds` with the same
functions, against the context the workflow reads. A name a foreach or branch brings into scope
(``item``) and a value of unknown or any type are not checked.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from compiler.errors import Finding
from compiler.ir import PipelineDef, ProcessDef
from compiler.passes.templates import located, name_line
from compiler.templates import analyse, node_templates, shown_path
from compiler.walk import iter_definitions

_SCALARS = frozenset({"integer", "number", "boolean", "null"})

#: filter → the JSON types on which it fails whatever the value
FAILS_ON: dict[str, frozenset[str]] = {
    **{name: _SCALARS for name in ("length", "count", "first", "last", "list", "reverse", "join", "truncate",
                                   "max", "min", "sort", "sum", "random")},
    **{name: _SCALARS | {"array", "object"} for name in ("wordwrap", "indent")},
    **{name: frozenset({"string", "null", "array", "object"}) for name in ("abs", "round", "filesizeformat")},
    **{name: _SCALARS | {"string", "array"} for name in ("dictsort", "xmlattr")},
}

#: a dotted field path and the first filter applied to it
_FILTERED = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)\s*\|\s*([a-z_]+)")
_EXPRESSION = re.compile(r"\{\{(.*?)\}\}", re.S)


def filter_problem(expression: str, schema: dict[str, Any], scope: frozenset[str] = frozenset()) -> str | None:
    """Why the filter of ``expression`` (``path | filter …``, the inside of ``{{ }}``) fails on
    some value of ``path``'s declared types; None when it cannot, or that is unknown."""
    from compiler.passes.write_types import _kinds, _named_kinds, _path_schema, _shown, _strip

    found = _FILTERED.match(expression)
    if found is None or found.group(1).split(".")[0] in scope:
        return None
    path, name = found.groups()
    fails = FAILS_ON.get(name)
    prop = _path_schema(schema, path) if fails else None
    bad = (_kinds(prop) or set()) & (fails or set())
    if prop is None or not bad:
        return None
    return f"`{path}` ({_shown(_strip(prop))}) can be {_named_kinds(bad)}, which the filter `{name}` fails on"


def member_problem(access: tuple[str | int, ...], schema: dict[str, Any]) -> tuple[str, str] | None:
    """``(finding message, hint)`` when the read ``access`` (``("meta", "field")``; an int is an
    index, ``("tags", 0, "kind")``) takes a member of a value whose declared types are all scalars
    (a string, a number, a boolean, null); None otherwise. An index of text is a character."""
    from compiler.passes.write_types import _kinds, _named_kinds, _path_schema

    for depth in range(1, len(access)):
        kinds = _kinds(_path_schema(schema, access[:depth]))
        if kinds is None or kinds & {"object", "array"} or (isinstance(access[depth], int) and "string" in kinds):
            continue
        parent = shown_path(access[:depth])
        member = f"field `{access[depth]}`" if isinstance(access[depth], str) else "list"
        return (f"`{shown_path(access[:depth + 1])}` reads a member of `{parent}`, which is {_named_kinds(kinds)}: it has none, "
                "and the render fails", f"read `{parent}` itself, or declare it {'an object with' if member != 'list' else 'a'} {member}")
    return None



def check(unit, ws) -> Iterator[Finding]:
    defn = unit.defn
    if not isinstance(defn, (ProcessDef, PipelineDef)):
        return
    for graph, graph_path in iter_definitions(defn, ()):
        schema = graph.context.schema_
        if not isinstance(schema, dict):
            continue
        for nid, node in graph.nodes.items():
            for path, text, scope in node_templates(node, (*graph_path, "nodes", nid)):
                for expression in _EXPRESSION.findall(text):
                    problem = filter_problem(expression, schema, scope)
                    if problem:
                        yield Finding("wrong-type", path, f"the template would fail: {problem}",
                                      hint="apply the filter to a field of the type it takes, or change the field's schema")
                        break
                info = analyse(text)
                for access in sorted(info.paths | info.indexed, key=shown_path):
                    found = member_problem(access, schema) if access[0] not in scope else None
                    if found:
                        yield located(unit, "wrong-type", path, found[0], line=name_line(text, str(access[0])), hint=found[1])
                        break
