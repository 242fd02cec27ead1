"""A form's data ↔ a submission's cells, checked against the form.

Form data is what a template's context holds and what ``ergon submissions create`` reads:
``{group: {field: value}}``, and for a repeating group ``{group: [{field: value}, …]}``. A
submission stores the same values one :class:`~flows.store.submissions.Cell` at a time. This
module converts both ways, checks data against the form's JSON Schema (every error with its
path, ``points[1].topic``), and reads the ``group.field=VALUE`` assignments of
``ergon submissions set``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from typing import Any

from compiler.forms import form_schema
from compiler.ir import FormDef, FormField, FormGroup
from flows.schema import validator_for
from flows.store.submissions import Cell, NewValue


class SubmissionInvalid(ValueError):
    """Data that does not fit the form: ``problems`` are ``path: message`` lines."""

    def __init__(self, problems: Sequence[str]):
        self.problems = list(problems)
        super().__init__("; ".join(self.problems))


def cell_path(cell: Cell, form: FormDef | None = None) -> str:
    """``group.field``, or ``group[entry].field`` in a repeating group."""
    group = _group(form, cell.group) if form is not None else None
    repeat = group.repeat if group is not None else cell.entry > 0
    return f"{cell.group}[{cell.entry}].{cell.field}" if repeat else f"{cell.group}.{cell.field}"


def problems(form: FormDef, data: Any) -> list[str]:
    """Every way ``data`` breaks the form, ``path: message`` (empty when it fits)."""
    out = []
    for err in sorted(validator_for(form_schema(form)).iter_errors(data), key=lambda e: [str(p) for p in e.absolute_path]):
        where = _path_text(list(err.absolute_path)) or "(the submission)"
        message = err.message if len(err.message) <= 300 else err.message[:300] + "…"
        out.append(f"{where}: {message}")
    return out


def _path_text(path: list[Any]) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def check(form: FormDef, data: Any) -> None:
    """Raise :class:`SubmissionInvalid` unless ``data`` fits the form."""
    found = problems(form, data)
    if found:
        raise SubmissionInvalid(found)


def to_values(form: FormDef, data: dict[str, Any]) -> tuple[list[NewValue], list[tuple[str, int]]]:
    """The cells of (valid) form data, and every group entry (an entry may hold no value)."""
    values: list[NewValue] = []
    entries: list[tuple[str, int]] = []
    for group in form.groups:
        if group.name not in data:
            continue
        raw = data[group.name]
        for entry, item in enumerate(raw if group.repeat else [raw]):
            entries.append((group.name, entry))
            for f in group.fields:
                if isinstance(item, dict) and f.name in item:
                    values.append(NewValue(Cell(group.name, entry, f.name), item[f.name]))
    return values, entries


def to_data(form: FormDef, cells: Iterable[tuple[Cell, Any]], entries: Iterable[tuple[str, int]] = ()) -> dict[str, Any]:
    """Form data from cells (each group's fields in the form's order; repeating entries in order)."""
    by_group: dict[str, dict[int, dict[str, Any]]] = {}
    for group_name, entry in entries:
        by_group.setdefault(group_name, {}).setdefault(entry, {})
    for cell, value in cells:
        by_group.setdefault(cell.group, {}).setdefault(cell.entry, {})[cell.field] = value
    out: dict[str, Any] = {}
    for group in form.groups:
        if group.name not in by_group:
            continue
        order = [f.name for f in group.fields]
        rows = [{k: row[k] for k in order if k in row} for _, row in sorted(by_group[group.name].items())]
        out[group.name] = rows if group.repeat else rows[0]
    return out


_ASSIGN = re.compile(r"^\s*([A-Za-z_][\w-]*)(?:\[(\d+)\])?\.([A-Za-z_][\w-]*)\s*=(.*)$", re.S)


def parse_assignment(form: FormDef, text: str) -> tuple[Cell, Any]:
    """``group.field=VALUE`` (``group[N].field=VALUE`` in a repeating group) as a cell and a
    value of the field's type: numbers, integers and booleans are read as JSON, other fields
    take the text as it is (JSON ``null`` clears nothing: a value is always a new version)."""
    m = _ASSIGN.match(text)
    if m is None:
        raise SubmissionInvalid([f"`{text}`: write group.field=VALUE, or group[N].field=VALUE in a repeating group"])
    group_name, index, field_name, raw = m.group(1), m.group(2), m.group(3), m.group(4)
    group = _group(form, group_name)
    if group is None:
        raise SubmissionInvalid([f"{group_name}: form `{form.name}` has no group `{group_name}` "
                                 f"(its groups: {', '.join(g.name for g in form.groups)})"])
    fld = _field(group, field_name)
    if fld is None:
        raise SubmissionInvalid([f"{group_name}.{field_name}: group `{group_name}` has no field `{field_name}` "
                                 f"(its fields: {', '.join(f.name for f in group.fields)})"])
    if group.repeat and index is None:
        raise SubmissionInvalid([f"{group_name}.{field_name}: `{group_name}` repeats; name the entry, "
                                 f"`{group_name}[0].{field_name}=…`"])
    if not group.repeat and index is not None:
        raise SubmissionInvalid([f"{group_name}[{index}].{field_name}: `{group_name}` does not repeat; "
                                 f"write `{group_name}.{field_name}=…`"])
    return Cell(group_name, int(index or 0), field_name), _typed(fld, raw)


def _typed(fld: FormField, raw: str) -> Any:
    if fld.type in ("number", "integer", "boolean"):
        try:
            return json.loads(raw)
        except ValueError:
            return raw  # the form's check names the type it wanted
    return raw


def _group(form: FormDef, name: str) -> FormGroup | None:
    return next((g for g in form.groups if g.name == name), None)


def _field(group: FormGroup, name: str) -> FormField | None:
    return next((f for f in group.fields if f.name == name), None)
