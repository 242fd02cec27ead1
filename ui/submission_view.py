"""What the submissions page shows of a value, as plain data (tested without Streamlit).

* :func:`source_badge` — where a version came from, in one word and a colour: ``manual``,
  ``import``, ``human``, ``merged``, or the kind of the transformation that made it (``llm_extract``);
* :func:`value_text` / :func:`edit_text` — a value on one line, and as an editor starts it;
* :func:`parse_edit` — what a person typed for a cell, typed as its field wants (the rules of
  ``ergon submissions set``: numbers, integers and booleans read as JSON, other fields as text);
* :func:`hops` — a value's provenance chain (:func:`flows.submissions.provenance.chain`) as the
  list the page draws, depth first, each link with how far back it is.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from compiler.ir import FormDef, FormField
from flows.store.submissions import Cell
from flows.submissions import shape
from flows.submissions.provenance import Link
from ui.format import markdown_text as markdown_text  # the page writes every text through it

#: badge colours by source (a transformation's badge names its kind)
COLOURS = {"manual": "blue", "import": "gray", "human": "green", "merged": "orange", "transformation": "violet"}
#: how many links of one provenance chain the page draws (a value may cite many inputs)
MAX_HOPS = 60


def source_badge(source_type: str, transformation: dict[str, Any] | None = None) -> tuple[str, str]:
    """``(label, colour)`` of a version's source."""
    if source_type == "transformation":
        return str((transformation or {}).get("kind") or "transformation"), COLOURS["transformation"]
    return source_type, COLOURS.get(source_type, "gray")


def value_text(value: Any, limit: int = 120) -> str:
    """A value on one line: ``—`` for none, yes/no, JSON for records and lists, cut at ``limit``."""
    if value is None:
        text = "—"
    elif isinstance(value, bool):
        text = "yes" if value else "no"
    elif isinstance(value, (dict, list)):
        text = json.dumps(value, ensure_ascii=False)
    else:
        text = " ".join(str(value).split()) or "(empty)"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def edit_text(value: Any) -> str:
    """What an editor starts with: text as it is, anything else as JSON, nothing as empty."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def form_field(form: FormDef, cell: Cell) -> FormField | None:
    group = next((g for g in form.groups if g.name == cell.group), None)
    return next((f for f in group.fields if f.name == cell.field), None) if group is not None else None


def parse_edit(form: FormDef, cell: Cell, raw: str) -> Any:
    """The value ``raw`` stands for in ``cell`` (:func:`flows.submissions.shape.parse_assignment`'s
    typing); whether it fits the form is :func:`flows.submissions.records.set_values`' to say."""
    _, value = shape.parse_assignment(form, f"{shape.cell_path(cell, form)}={raw}")
    return value


@dataclass(frozen=True)
class Hop:
    """One link of a drawn chain: ``depth`` 0 is the value itself, 1 an input it was taken from…"""

    depth: int
    link: Link
    #: the inputs its transformation read that are drawn under another link (a value cited twice)
    shown_elsewhere: int


def hops(root: Link, limit: int = MAX_HOPS) -> tuple[list[Hop], int]:
    """The chain depth first, at most ``limit`` links, and how many were left out."""
    out: list[Hop] = []
    left = 0
    stack: list[tuple[int, Link]] = [(0, root)]
    while stack:
        depth, link = stack.pop()
        if len(out) >= limit:
            left += _size(link)
            continue
        children = {c.version_id for c in link.inputs}
        out.append(Hop(depth, link, sum(1 for i in link.info.inputs if i not in children)))
        inputs = sorted(link.inputs, key=lambda c: (c.info.submission_id, c.info.value.cell))  # a stable order
        stack.extend((depth + 1, c) for c in reversed(inputs))
    return out, left


def _size(link: Link) -> int:
    return 1 + sum(_size(c) for c in link.inputs)
