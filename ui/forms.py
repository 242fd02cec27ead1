"""Form widgets generated from data: a human task's fields, and a definition's input schema.

Both return the values as typed by the person, unchecked: the checks belong to the same
functions the CLI uses (:func:`flows.humans.validate_answer` through ``humans.answer``, and
``validate_inputs`` through :func:`flows.runs.start_detached`), so the dashboard refuses
exactly what the CLI refuses, with the same messages. Call these inside an ``st.form``.
"""

from __future__ import annotations

import json
from typing import Any

import streamlit as st


def field_label(name: str, title: str | None = None) -> str:
    """What a person reads for a field: its schema ``title``, else its name in words
    (``due_date`` → ``Due date``)."""
    if title:
        return title
    words = name.replace("_", " ").replace("-", " ").strip()
    return words[:1].upper() + words[1:] if words else name


def _label(name: str, label: str | None, required: bool) -> str:
    return field_label(name, label) + (" *" if required else "")


def task_fields(fields: Any, key: str) -> dict[str, Any]:
    """One widget per task field (select → selectbox, text → text area, string → text input,
    boolean → checkbox, number/integer → number input); the raw answer, keyed by field name.
    An untouched select or number is None, which the validation calls "required" when it is."""
    from flows.humans import normalize_fields

    values: dict[str, Any] = {}
    for f in normalize_fields(fields):
        name, kind, default = f["name"], f["type"], f["default"]
        label, help_ = _label(name, f["label"], f["required"]), f["description"]
        wkey = f"{key}:{name}"
        if kind == "select":
            options = list(f["options"] or [])
            index = options.index(default) if default in options else None
            shown = f["option_labels"] or {}  # value → label (a `trigger: user` exit's label)
            values[name] = st.selectbox(label, options, index=index, key=wkey, help=help_, placeholder="Choose…",
                                        format_func=lambda o, shown=shown: str(shown.get(str(o), o)))
        elif kind == "text":
            values[name] = st.text_area(label, value=default or "", key=wkey, help=help_)
        elif kind == "boolean":
            values[name] = st.checkbox(label, value=bool(default), key=wkey, help=help_)
        elif kind == "integer":
            values[name] = st.number_input(label, value=default, step=1, key=wkey, help=help_)
        elif kind == "number":
            values[name] = st.number_input(label, value=None if default is None else float(default), key=wkey,
                                           help=help_, format="%g")
        else:
            values[name] = st.text_input(label, value=default or "", key=wkey, help=help_)
    return values


def _type(spec: dict[str, Any]) -> str | None:
    kind = spec.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    return kind


def schema_inputs(input_schema: dict[str, Any], initial: dict[str, Any], key: str) -> tuple[dict[str, Any], list[str]]:
    """One widget per property of a run's input schema (types, enums, required marks and
    descriptions from ``context.schema``); ``(inputs, problems)``.

    Blank optional fields are left out (the definition's ``context.initial`` applies); a blank
    required field is left out too, so the start is refused with "missing required input".
    A list of plain values (strings, numbers, booleans) is typed one item per line and each
    line read as the item type; other arrays and objects are typed as JSON. Text that cannot be
    read is a problem named here, with the field's label.
    """
    props: dict[str, Any] = input_schema.get("properties") or {}
    required = set(input_schema.get("required") or [])
    inputs: dict[str, Any] = {}
    problems: list[str] = []
    for name, spec in props.items():
        spec = spec if isinstance(spec, dict) else {}
        kind, enum = _type(spec), spec.get("enum")
        default = spec.get("default", initial.get(name))
        label, help_ = _label(name, spec.get("title"), name in required), spec.get("description")
        wkey = f"{key}:{name}"
        if enum:
            index = enum.index(default) if default in enum else None
            value = st.selectbox(label, enum, index=index, key=wkey, help=help_, placeholder="Choose…", format_func=str)
        elif kind == "boolean":
            value = st.checkbox(label, value=bool(default), key=wkey, help=help_)
            if name not in required and value == bool(default):
                value = None  # unchanged: let context.initial (or the schema's absence) apply
        elif kind == "integer":
            value = st.number_input(label, value=default if isinstance(default, int) else None, step=1, key=wkey,
                                    help=help_)
        elif kind == "number":
            value = st.number_input(label, value=float(default) if isinstance(default, (int, float)) else None,
                                    key=wkey, help=help_, format="%g")
        elif kind == "string":
            value = st.text_input(label, value=default if isinstance(default, str) else "", key=wkey, help=help_)
        elif kind == "array" and _type(spec.get("items") or {}) in _ITEM_READERS:
            item_kind = _type(spec.get("items") or {}) or "string"
            shown = "\n".join(str(v) for v in default) if isinstance(default, list) else ""
            text = st.text_area(label, value=shown, key=wkey, placeholder=f"one {_ITEM_WORDS[item_kind]} per line",
                                help=(help_ + " — " if help_ else "") + f"one {_ITEM_WORDS[item_kind]} per line")
            value = None
            if text.strip():
                value, bad = _read_lines(text, item_kind)
                if bad:
                    problems.append(f"{field_label(name, spec.get('title'))}: line {bad[0]} is not "
                                    f"{_ITEM_WORDS[item_kind]}" + (" (and others)" if len(bad) > 1 else ""))
                    value = None
        else:
            shown = "" if default is None else json.dumps(default, indent=2)
            text = st.text_area(f"{label} (JSON)", value=shown, key=wkey, help=help_)
            value = None
            if text.strip():
                try:
                    value = json.loads(text)
                except json.JSONDecodeError as exc:
                    problems.append(f"{field_label(name, spec.get('title'))}: not valid JSON "
                                    f"({exc.msg} at line {exc.lineno}, column {exc.colno})")
        if value is None or (isinstance(value, str) and not value.strip()):
            continue
        inputs[name] = value
    return inputs, problems


_ITEM_WORDS = {"string": "a text", "integer": "a whole number", "number": "a number", "boolean": "yes or no"}


def _boolean(text: str) -> bool:
    low = text.lower()
    if low in ("yes", "true", "1", "on"):
        return True
    if low in ("no", "false", "0", "off"):
        return False
    raise ValueError(text)


_ITEM_READERS: dict[str, Any] = {"string": str, "integer": int, "number": float, "boolean": _boolean}


def _read_lines(text: str, kind: str) -> tuple[list[Any], list[int]]:
    """The non-blank lines of ``text`` read as ``kind`` items, and the numbers of lines that were not."""
    values, bad = [], []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            values.append(_ITEM_READERS[kind](line.strip() if kind != "string" else line))
        except ValueError:
            bad.append(number)
    return values, bad
