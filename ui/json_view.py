"""A JSON value as a tree the browser draws by itself: nested ``<details>`` in one ``st.html``.

``st.json`` draws with a React viewer whose code (about 150 KB) a page loads the first time it
shows one, and which builds every open key as React elements: a run's page shows six of them
(a visit's input and output, a tool's arguments and result, the run's inputs and context).
Here each level is a ``<details>`` element: it opens and closes without a round trip to the
server or any script, the closed ones say how many keys or items they hold, and the whole tree
is one element for Streamlit to place. A run's page settled about 20 ms sooner with the trees
(by the page's clock, 10 alternating starts on a 2-core machine, 2026-12-07: within that
machine's noise, and its browser fetches the viewer's code at no cost).

The tree's text is the value's JSON (keys, commas and brackets included; the markers and the
"3 keys" of a closed level are drawn by CSS and are not text), so an open tree selected and
copied is JSON, and a test can read the value back. A value of more than :data:`MAX_NODES`
values or nested deeper than :data:`MAX_DEPTH` goes to ``st.json``, which builds a closed
level only when it is opened.
"""

from __future__ import annotations

import html
import json
from typing import Any

import streamlit as st

#: Above this many values (keys and items, at any depth), the HTML of a tree outweighs what
#: ``st.json`` costs: it would carry every closed level too.
MAX_NODES = 2_000
#: Deeper than this, ``st.json``: the tree is built by recursion.
MAX_DEPTH = 64

# Colours readable on Streamlit's light and dark backgrounds; the keys take the text's colour.
_CSS = """<style>
.ergon-json { font-family: "Source Code Pro", monospace; font-size: 0.875rem; line-height: 1.6;
  white-space: pre-wrap; overflow-wrap: anywhere; margin-bottom: 0.5rem; }
.ergon-json .i { padding-left: 1.25rem; }
.ergon-json > div, .ergon-json .i > div { padding-left: 1rem; }
.ergon-json summary { list-style: none; cursor: pointer; }
.ergon-json summary::-webkit-details-marker { display: none; }
.ergon-json summary::before { content: "\\25B8"; display: inline-block; width: 1rem; opacity: 0.6; }
.ergon-json details[open] > summary::before { content: "\\25BE"; }
.ergon-json details:not([open]) > summary::after { content: " " attr(data-closed); opacity: 0.6; }
.ergon-json .s { color: rgb(0, 150, 100); }
.ergon-json .n { color: rgb(28, 131, 225); }
</style>"""


def show(value: Any, *, expanded: bool | int = 2) -> None:
    """Draw ``value`` with its first ``expanded`` levels open (``True``: all, ``False``: none,
    as ``st.json`` counts them)."""
    if not _small(value):
        st.json(value, expanded=expanded)
        return
    st.html(tree_html(value, expanded=expanded))


def tree_html(value: Any, *, expanded: bool | int = 2) -> str:
    """The tree of ``value`` as HTML, every key and string escaped."""
    depth = MAX_DEPTH + 1 if expanded is True else 0 if expanded is False else int(expanded)
    out = [_CSS, '<div class="ergon-json">']
    _node(out, None, value, 0, depth, last=True)
    out.append("</div>")
    return "".join(out)


def _small(value: Any) -> bool:
    """At most :data:`MAX_NODES` values and :data:`MAX_DEPTH` levels (counted without recursion)."""
    count = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, level = stack.pop()
        count += 1
        if count > MAX_NODES or level > MAX_DEPTH:
            return False
        if isinstance(item, dict):
            stack.extend((v, level + 1) for v in item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend((v, level + 1) for v in item)
    return True


def _text(value: Any) -> str:
    return html.escape(json.dumps(value, default=str, ensure_ascii=False))


def _node(out: list[str], key: str | None, value: Any, level: int, depth: int, *, last: bool) -> None:
    label = "" if key is None else f'<span class="k">{_text(str(key))}</span>: '
    comma = "" if last else ","
    if isinstance(value, (dict, list, tuple)) and value:
        is_object = isinstance(value, dict)
        opener, closer = ("{", "}") if is_object else ("[", "]")
        noun = ("key" if is_object else "item") + ("" if len(value) == 1 else "s")
        closed = html.escape(f"{len(value):,} {noun} {closer}{comma}")
        out.append(f'<details{" open" if level < depth else ""}><summary data-closed="{closed}">'
                   f'{label}{opener}</summary><div class="i">')
        items = list(value.items()) if is_object else [(None, v) for v in value]
        for i, (k, v) in enumerate(items):
            _node(out, k, v, level + 1, depth, last=i == len(items) - 1)
        out.append(f"</div>{closer}{comma}</details>")
        return
    # here a value is a scalar or an empty container: strings, then null and {} / [], then numbers and booleans
    kind = "s" if isinstance(value, str) else "p" if value is None or isinstance(value, (dict, list, tuple)) else "n"
    out.append(f'<div>{label}<span class="{kind}">{_text(value)}</span>{comma}</div>')
