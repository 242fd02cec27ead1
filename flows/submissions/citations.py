"""A template step's answer with its citations: every field as ``{value, refId}``.

Seed 000's data flow: an LLM step answers each field of its output form as ``{value, refId?}``,
``refId`` naming the input value(s) the value was taken from. Here that is:

* :func:`cited_schema` — the output form's JSON Schema with every field wrapped so (``refId`` a
  version id or a list of them; it may be left out where no input value supports the value);
* :func:`input_block` — the step's input values with their version ids, for the prompt;
* :func:`read_answer` — the answer taken apart: the plain form data the context gets, and per
  cell its value and the ids it cites; :func:`unknown_refs` names every citation that is not a
  value of the step's input (the model is shown them in its repair turn).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from compiler.forms import field_schema
from compiler.ir import FormDef
from flows.llm.agent import INPUT_BEGIN, INPUT_END
from flows.store.submissions import Cell, CellValue
from flows.submissions.shape import cell_path

#: the two keys of a cited field, in the order models are asked for them
CITED_KEYS = ("value", "refId")

REF_SCHEMA: dict[str, Any] = {
    "description": "The refId(s) of the input value(s) this value was taken from.",
    "anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}, "minItems": 1}],
}


def _cited(schema: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": {"value": schema, "refId": REF_SCHEMA}, "required": ["value"],
            "additionalProperties": False}


def cited_schema(form: FormDef) -> dict[str, Any]:
    """The form's schema (:func:`compiler.forms.form_schema`'s shape) with each field cited."""
    groups: dict[str, Any] = {}
    for group in form.groups:
        entry: dict[str, Any] = {"type": "object", "additionalProperties": False,
                                 "properties": {f.name: _cited(field_schema(f)) for f in group.fields}}
        required = [f.name for f in group.fields if f.required]
        if required:
            entry["required"] = required
        groups[group.name] = {"type": "array", "items": entry, **({"minItems": 1} if group.required else {})} \
            if group.repeat else entry
    out: dict[str, Any] = {"type": "object", "properties": groups, "additionalProperties": False}
    required = [g.name for g in form.groups if g.required]
    if required:
        out["required"] = required
    return out


def input_block(form: FormDef | None, values: Sequence[CellValue]) -> str:
    """The step's input values, one ``{refId, path, value}`` each, between explicit markers."""
    rows = [{"refId": v.version_id, "path": cell_path(v.cell, form), "value": v.value} for v in values]
    return "\n".join([
        "Each field of your answer is an object {\"value\": …, \"refId\": …}: `value` is the field's value and",
        "`refId` the refId of the input value it was taken from (a list of refIds when it combines several;",
        "leave `refId` out only when no input value supports it). Cite only refIds listed here.",
        INPUT_BEGIN,
        json.dumps(rows, ensure_ascii=False, indent=1, default=str),
        INPUT_END,
    ])


@dataclass(frozen=True)
class CitedValue:
    cell: Cell
    value: Any
    refs: tuple[str, ...]


def read_answer(form: FormDef, answer: dict[str, Any]) -> tuple[dict[str, Any], list[CitedValue], list[tuple[str, int]]]:
    """(the plain form data, each cell's value and citations, every group entry) of a
    schema-valid cited answer."""
    plain: dict[str, Any] = {}
    cited: list[CitedValue] = []
    entries: list[tuple[str, int]] = []
    for group in form.groups:
        if group.name not in answer:
            continue
        raw = answer[group.name]
        rows = []
        for i, entry in enumerate(raw if group.repeat else [raw]):
            entries.append((group.name, i))
            row = {}
            for f in group.fields:
                if f.name in entry:
                    item = entry[f.name]
                    row[f.name] = item["value"]
                    ref = item.get("refId")
                    refs = tuple(ref) if isinstance(ref, list) else (ref,) if isinstance(ref, str) else ()
                    cited.append(CitedValue(Cell(group.name, i, f.name), item["value"], refs))
            rows.append(row)
        plain[group.name] = rows if group.repeat else rows[0]
    return plain, cited, entries


def unknown_refs(form: FormDef, cited: Iterable[CitedValue], allowed: set[str], *, prefix: str = "") -> list[str]:
    """A problem line for each citation that is not one of ``allowed`` (the step's input)."""
    out = []
    for c in cited:
        for ref in c.refs:
            if ref not in allowed:
                out.append(f"{prefix}{cell_path(c.cell, form)}.refId: `{ref[:80]}` is not a refId of this step's input; "
                           f"cite refIds listed between {INPUT_BEGIN.split(' (')[0]} and {INPUT_END}")
    return out
