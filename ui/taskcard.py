"""What an approver reviews, as words and tables rather than JSON.

:func:`subject` picks the values a task is about: the context fields its title and description
templates read (``Review {{ party }}`` is about ``party``), labelled with the schema's title
and described by its description. :func:`show_value` draws one value readably (text as text,
a list of records as a table, a record as label/value lines), and :func:`detail_text` turns an
audit entry's detail into a line of text.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import streamlit as st

from ui.format import markdown_text
from ui.forms import field_label


@dataclass(frozen=True)
class Field:
    name: str
    label: str
    help: str | None
    value: Any


def _templates(plan: Any, node_id: str) -> list[str]:
    from compiler.ir import HumanTaskNode

    node = plan.nodes.get(node_id) if plan is not None else None
    if node is None or node.type != "human_task":
        return []
    spec = node.body_as(HumanTaskNode).task
    return [t for t in (spec.title, spec.description) if t]


def subject(plan: Any, task: Any, context: dict[str, Any] | None) -> list[Field]:
    """The context values the task's title and description read, in the schema's order."""
    from compiler.templates import template_reads

    context = context or {}
    reads: set[str] = set()
    for text in _templates(plan, task.node_id):
        try:
            reads |= template_reads(text)
        except Exception:  # noqa: BLE001 - a template the checker let through but this cannot read
            continue
    props = ((plan.context_schema or {}).get("properties") or {}) if plan is not None else {}
    order = [n for n in props if n in reads] + sorted(reads - set(props))
    out = []
    for name in order:
        if name not in context:
            continue
        spec = props.get(name) if isinstance(props.get(name), dict) else {}
        out.append(Field(name, field_label(name, spec.get("title")), spec.get("description"), context[name]))
    return out


def _scalar(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def show_value(value: Any) -> None:
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        st.dataframe(value, hide_index=True)
    elif isinstance(value, list):
        st.markdown("\n".join(f"- {_scalar(v) if not isinstance(v, (dict, list)) else json.dumps(v)}" for v in value)
                    or "_(empty list)_")
    elif isinstance(value, dict):
        st.markdown("  \n".join(f"**{k}**: {_scalar(v) if not isinstance(v, (dict, list)) else json.dumps(v)}"
                                for k, v in value.items()) or "_(empty)_")
    elif isinstance(value, str) and "\n" in value:
        st.text(value)
    else:
        st.markdown(markdown_text(_scalar(value)))


def detail_text(detail: Any) -> str:
    """An audit entry's detail as ``key: value`` words (``assignee: group:legal``)."""
    if not detail:
        return ""
    if isinstance(detail, dict):
        return ", ".join(f"{k}: {_scalar(v) if not isinstance(v, (dict, list)) else json.dumps(v)}"
                         for k, v in detail.items() if v is not None)
    return str(detail)
