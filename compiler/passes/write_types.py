"""The `write_types` pass: values a definition fixes, or lets a person give, must fit their field.

The runtime refuses a write that violates ``context.schema`` and fails the node
(``flows.runtime.context``). Two kinds of writes are known before any run, so a refusal of
those is the definition's mistake and is reported here (code ``write-type``):

* **fixed values** — a tool node's ``config.context_update``, and ``set_context``'s
  ``input.updates``: a value with no template in it that the field's schema refuses;
* **a person's answer** — the fields of a ``human_task`` that the node writes (the answer is
  copied into the context field of the same name):

  - a ``select`` option the field's schema refuses (the person may pick it);
  - a field type that gives values the schema refuses: ``boolean`` into a field without
    booleans, ``number`` into one without numbers (an ``integer`` field refuses 2.5: use
    ``type: integer``), ``integer`` into one without numbers, ``text``/``string`` into one
    without strings or with an ``enum``/``const`` (the person may type anything: use a
    ``select`` with those options);
  - an optional field left empty: it writes its ``default``, else its empty value (``""`` for
    text, ``false`` for a boolean, ``null`` otherwise, as ``flows.humans`` fills it), which
    the schema must accept.

Values with templates, and answers within a type the schema accepts but outside its bounds,
depend on the run and are checked when the run writes them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from jsonschema import Draft202012Validator

from compiler.errors import DocPath, Finding
from compiler.ir import HumanTaskNode, PipelineDef, ProcessDef, TaskField, ToolNode
from compiler.templates import is_template
from compiler.walk import iter_definitions, iter_nodes

#: what an optional field left empty writes (flows.humans gives the same)
_EMPTY: dict[str, Any] = {"text": "", "string": "", "boolean": False}


def check(unit, ws) -> Iterator[Finding]:
    if not isinstance(unit.defn, (ProcessDef, PipelineDef)):
        return
    for graph, base in iter_definitions(unit.defn):
        schema = graph.context.schema_
        for site in iter_nodes(graph, base):
            node = site.node
            if isinstance(node, ToolNode):
                if node.config and node.config.context_update:
                    yield from _fixed(schema, node.config.context_update, (*site.path, "config", "context_update"))
                if node.tool == "set_context" and isinstance((node.input or {}).get("updates"), dict):
                    yield from _fixed(schema, node.input["updates"], (*site.path, "input", "updates"))  # type: ignore[index]
            elif isinstance(node, HumanTaskNode):
                for i, f in enumerate(node.task.fields):
                    if f.name in node.writes:
                        yield from _answer(schema, f, (*site.path, "task", "fields", i))


def _field_schema(schema: Any, name: str) -> dict[str, Any] | None:
    """The schema of top-level field ``name``, with the root's definitions for its `$ref`s."""
    props = schema.get("properties") if isinstance(schema, dict) else None
    prop = props.get(name) if isinstance(props, dict) else None
    if not isinstance(prop, dict):
        return None
    return {**{k: schema[k] for k in ("$defs", "definitions") if k in schema}, **prop}


def _fits(prop: dict[str, Any], value: Any) -> bool:
    try:
        return Draft202012Validator(prop).is_valid(value)
    except Exception:  # noqa: BLE001 - a broken schema (unknown type, bad regex...) is bad-schema's diagnostic
        return True


def _has_template(value: Any) -> bool:
    if isinstance(value, str):
        return is_template(value)
    if isinstance(value, dict):
        return any(_has_template(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_template(v) for v in value)
    return False


def _shown(value: Any) -> str:
    return json.dumps(value, default=str, ensure_ascii=False)


def _fixed(schema: Any, updates: dict[str, Any], path: DocPath) -> Iterator[Finding]:
    for key, value in updates.items():
        prop = _field_schema(schema, key)
        if prop is None or _has_template(value) or _fits(prop, value):
            continue  # an unknown field is write-not-in-schema's; templates are known at run time
        yield Finding("write-type", (*path, key),
                      f"the fixed value {_shown(value)} does not fit `{key}` in context.schema ({_shown(_strip(prop))})",
                      hint=f"write a value `{key}`'s schema accepts, or change the field's schema")


def _strip(prop: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in prop.items() if k not in ("$defs", "definitions", "description", "title")}


def _types(prop: dict[str, Any]) -> set[str] | None:
    """The JSON types the field accepts, when its schema says (None: any)."""
    kind = prop.get("type")
    if isinstance(kind, str):
        return {kind}
    if isinstance(kind, list):
        return {k for k in kind if isinstance(k, str)}
    return None


def _answer(schema: Any, f: TaskField, path: DocPath) -> Iterator[Finding]:
    prop = _field_schema(schema, f.name)
    if prop is None:
        return
    shown = _shown(_strip(prop))
    types = _types(prop)
    closed = "enum" in prop or "const" in prop
    if f.type == "select":
        for j, option in enumerate(f.options or []):
            if not _fits(prop, option):
                yield Finding("write-type", (*path, "options", j),
                              f"option {_shown(option)} of select `{f.name}` does not fit `{f.name}` in context.schema ({shown})",
                              hint=f"offer only values `{f.name}`'s schema accepts, or add this one to its schema")
    else:
        problem = None
        if f.type in ("text", "string"):
            if types is not None and "string" not in types:
                problem = "takes no strings"
            elif closed:
                problem = "takes only some values, and a person may type anything"
        elif f.type == "boolean":
            if not (_fits(prop, True) and _fits(prop, False)):
                problem = "does not take both true and false"
        elif f.type == "number":
            if closed or (types is not None and "number" not in types):
                problem = "does not take every number" + (" (an integer field refuses 2.5)" if types and "integer" in types else "")
        elif f.type == "integer":
            if closed or (types is not None and not types & {"integer", "number"}):
                problem = "does not take every whole number"
        if problem:
            fix = {"text": "a select whose options it accepts", "string": "a select whose options it accepts",
                   "number": "`type: integer` for whole numbers, or a select", "integer": "a select",
                   "boolean": "a select"}[f.type]
            yield Finding("write-type", (*path, "type"),
                          f"a `{f.type}` answer to `{f.name}` is written to the context, and `{f.name}` in context.schema "
                          f"({shown}) {problem}",
                          hint=f"use {fix}, or change the field's schema")
    if not f.required:
        empty = f.default if f.default is not None else _EMPTY.get(f.type)
        if not _fits(prop, empty):
            what = "its default" if f.default is not None else "its empty value"
            yield Finding("write-type", (*path, "required") if f.default is None else (*path, "default"),
                          f"optional field `{f.name}` left empty writes {what} {_shown(empty)}, which `{f.name}` in "
                          f"context.schema ({shown}) refuses",
                          hint=f"make it `required: true`, give it a `default` the schema accepts, or let the schema take {_shown(empty)}")
