"""Showing artifacts (markdown rendered, tables as tables, JSON as JSON, charts drawn) and
comparing two versions of one (a unified diff for text, a structural diff for JSON).

The shaping and diffing functions are pure and tested without Streamlit; :func:`show` draws.
"""

from __future__ import annotations

import difflib
import json
from typing import Any

import streamlit as st

from flows.store.diff import context_diff
from ui import json_view

TEXT_TYPES = ("markdown", "file")


def table_rows(content: Any) -> list[dict[str, Any]] | None:
    """A table artifact as rows: a list of objects, ``{columns, rows}``, or ``{column: [values]}``."""
    if isinstance(content, list) and all(isinstance(r, dict) for r in content):
        return content
    if isinstance(content, dict):
        cols, rows = content.get("columns"), content.get("rows")
        if isinstance(cols, list) and isinstance(rows, list):
            names = [c.get("name", c.get("key")) if isinstance(c, dict) else c for c in cols]
            return [dict(zip(names, r, strict=False)) if isinstance(r, list) else r for r in rows]
        if content and all(isinstance(v, list) for v in content.values()):
            length = max(len(v) for v in content.values())
            return [{k: (v[i] if i < len(v) else None) for k, v in content.items()} for i in range(length)]
    return None


def chart_spec(content: Any) -> dict[str, Any] | None:
    """A Vega-Lite spec for a chart artifact: the spec itself (it has ``mark`` or ``layer``), or
    one built from ``{data, x, y, kind}`` or from rows (first column on x, second on y)."""
    if isinstance(content, dict) and any(k in content for k in ("mark", "layer", "hconcat", "vconcat", "concat")):
        return content
    rows, x, y, mark = None, None, None, "bar"
    if isinstance(content, dict) and isinstance(content.get("data"), list):
        rows, x, y = content["data"], content.get("x"), content.get("y")
        mark = content.get("kind") or content.get("type") or mark
    elif isinstance(content, list):
        rows = content
    if not rows or not all(isinstance(r, dict) for r in rows):
        return None
    keys = list(rows[0])
    x = x or (keys[0] if keys else None)
    y = y or (keys[1] if len(keys) > 1 else None)
    if x is None or y is None:
        return None
    numeric_x = all(isinstance(r.get(x), (int, float)) for r in rows)
    return {"data": {"values": rows}, "mark": {"type": mark, "tooltip": True},
            "encoding": {"x": {"field": x, "type": "quantitative" if numeric_x else "nominal", "sort": None},
                         "y": {"field": y, "type": "quantitative"}}}


def as_text(content: Any) -> str:
    return content if isinstance(content, str) else json.dumps(content, indent=2, sort_keys=True, default=str)


def text_diff(old: Any, new: Any, old_label: str, new_label: str) -> str:
    """A unified diff of two texts (JSON values are pretty-printed first)."""
    lines = difflib.unified_diff(as_text(old).splitlines(), as_text(new).splitlines(), old_label, new_label,
                                 lineterm="")
    return "\n".join(lines)


def _indexed(value: Any) -> Any:
    # context_diff replaces lists whole; numbering their items lets it point at the item that changed.
    if isinstance(value, list):
        return {str(i): _indexed(v) for i, v in enumerate(value)}
    if isinstance(value, dict):
        return {k: _indexed(v) for k, v in value.items()}
    return value


def json_diff(old: Any, new: Any) -> list[dict[str, Any]]:
    """Where two JSON values differ: ``[{op, path, old, new}]`` with JSON-Pointer paths (list
    items by index; the root itself is ``""``)."""
    ops = context_diff({"": _indexed(old)}, {"": _indexed(new)})
    for op in ops:
        op["path"] = op["path"][1:]  # drop the wrapper's empty key: "//a/0" → "/a/0", "/" → ""
    return ops


def show(type_: str, content: Any, *, key: str) -> None:
    """Draw one artifact's content by its type."""
    if type_ == "markdown":
        st.markdown(content if isinstance(content, str) else as_text(content))
    elif type_ == "table" and (rows := table_rows(content)) is not None:
        st.dataframe(rows, hide_index=True, key=f"{key}:table")
    elif type_ == "chart" and (spec := chart_spec(content)) is not None:
        st.vega_lite_chart(spec=spec, key=f"{key}:chart")
    elif type_ == "file":
        st.code(as_text(content), language=None)
        st.download_button("Download", as_text(content), file_name=key.rsplit(":", 1)[-1] or "artifact.txt",
                           key=f"{key}:download")
    else:
        json_view.show(content, expanded=2)
