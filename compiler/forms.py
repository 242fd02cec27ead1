"""Forms → JSON Schema.

A form (seed 000: agent templates read and produce *form submissions*) is groups of typed
fields; a repeating group holds a list of entries. Ergon never interprets forms at run time:
it compiles each one to a JSON Schema once, and that schema is what the template's context,
the agents' derived result schemas and the dashboard's start-run form use.

Choices made here:

* group objects and the top-level object are ``additionalProperties: false``: a form is a closed
  shape, and closed object schemas are what providers' strict structured-output modes accept;
* ``document`` fields carry ``format: document`` and ``editor: document`` — the pair the
  process authoring rules require of document fields in a context schema;
* ``text`` is a long string: same JSON type as ``string``, with ``format: text`` so that a form
  renderer can pick a text area (``format`` is an annotation for unknown values, so validation
  is unaffected).
"""

from __future__ import annotations

from typing import Any

from compiler.ir import FormDef, FormField, FormGroup


def field_schema(field: FormField) -> dict[str, Any]:
    """The JSON Schema of one form field."""
    out: dict[str, Any]
    if field.type == "string":
        out = {"type": "string"}
    elif field.type == "text":
        out = {"type": "string", "format": "text"}
    elif field.type == "number":
        out = {"type": "number"}
    elif field.type == "integer":
        out = {"type": "integer"}
    elif field.type == "boolean":
        out = {"type": "boolean"}
    elif field.type == "date":
        out = {"type": "string", "format": "date"}
    elif field.type == "select":
        out = {"type": "string", "enum": list(field.options or [])}
    elif field.type == "document":
        out = {"type": "string", "format": "document", "editor": "document"}
    else:  # pragma: no cover - the IR's Literal forbids anything else
        raise AssertionError(f"unhandled form field type {field.type!r}")
    if field.label:
        out["title"] = field.label
    if field.description:
        out["description"] = field.description
    return out


def group_schema(group: FormGroup) -> dict[str, Any]:
    """A group is an object; a repeating group is an array of such objects."""
    entry: dict[str, Any] = {
        "type": "object",
        "properties": {f.name: field_schema(f) for f in group.fields},
        "additionalProperties": False,
    }
    required = [f.name for f in group.fields if f.required]
    if required:
        entry["required"] = required
    out: dict[str, Any] = {"type": "array", "items": entry} if group.repeat else entry
    if group.label:
        out["title"] = group.label
    if group.repeat and group.required:
        out["minItems"] = 1  # a required repeating group has at least one entry
    return out


def form_schema(form: FormDef) -> dict[str, Any]:
    """The JSON Schema of a whole form: one property per group."""
    out: dict[str, Any] = {
        "type": "object",
        "title": form.name,
        "properties": {g.name: group_schema(g) for g in form.groups},
        "additionalProperties": False,
    }
    if form.description:
        out["description"] = form.description
    required = [g.name for g in form.groups if g.required]
    if required:
        out["required"] = required
    return out
