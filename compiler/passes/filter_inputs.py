"""The `filter_inputs` pass: a Jinja filter is given a value it can work on.

``{{ ratio | length }}`` fails when ``ratio`` is a number (Python's ``len`` of a float), and the
runtime fails the node as a ``definition`` error (:func:`compiler.templates.render_value`). When
a template applies a filter directly to a field whose declared types include one the filter
always fails on, that failure is certain for such a value before any run: ``wrong-type``.

Checked: ``{{ path | filter … }}`` in the templates of process and pipeline nodes (against the
definition's ``context.schema``; an inline child's against its own) and ``${path | filter}`` in a
workflow step's ``params`` (:mod:`compiler.passes.lowered_kinds`, against the context the
workflow reads). A name a foreach or branch brings into scope (``item``) and a field of unknown
or any type are not checked. The table says, per filter, the JSON types on which the filter
fails for *every* value (measured on the sandboxed environment the runtime renders with).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from compiler.errors import Finding
from compiler.ir import PipelineDef, ProcessDef
from compiler.templates import node_templates
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
    from compiler.passes.write_types import _kinds, _path_schema, _shown, _strip

    found = _FILTERED.match(expression)
    if found is None or found.group(1).split(".")[0] in scope:
        return None
    path, name = found.groups()
    fails = FAILS_ON.get(name)
    prop = _path_schema(schema, path) if fails else None
    kinds = _kinds(prop)
    if not fails or kinds is None or prop is None:
        return None
    bad = kinds & fails
    if not bad:
        return None
    if "number" in bad:  # integer ⊂ number: one word for both
        bad -= {"integer"}
    named = " or ".join("an integer" if k == "integer" else f"a {k}" if k != "array" else "an array" for k in sorted(bad))
    return f"`{path}` ({_shown(_strip(prop))}) can be {named}, which the filter `{name}` fails on"


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
