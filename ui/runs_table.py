"""The Runs page's table: one page of runs as a plain HTML table, drawn by a few lines of our own
JavaScript (an ``st.components.v2`` component mounted in the page itself, no iframe).

Streamlit's ``st.dataframe`` draws a canvas grid whose code (about 1.5 MB of JavaScript and the
Arrow reader) is fetched the first time a grid appears; on the dashboard's first page that fetch
and the grid's first draw took about a second after the script had finished (2026-12-06, see
``benchmarks/RESULTS.md``). A page of 25–200 rows needs none of it: this table is HTML, reads as
text (search, copy, screen readers), and draws in the same frame as its data arrives.

What it does in the browser:

* the run column is a link to the run's page (``run?run=<id>``): a plain click opens it in this
  tab without reloading the dashboard, and a middle or modified click opens a new tab, as any
  link does. The plain click moves the browser's history to the link and tells the page so (a
  ``popstate`` event), which Streamlit answers as it answers the Back and Forward buttons: one
  script run, of the run's page. Sending the click to Python instead cost a script run of this
  page first, which then switched pages: 70-90 ms of every opened run (2026-12-07, alternating
  starts on a 2-core machine). Back returns to the Runs page;
* a click elsewhere on a row selects that run (state ``selected``, a run id: the selection
  belongs to the run, so it stays on it when a live refresh moves it down), which the page
  answers with an "Open run …" link below the table; a second click clears it;
* a click on a column's header sorts the rows shown by that column, again to reverse, a third
  time back to newest first (as the grid sorted the rows it showed); the order is kept across
  live refreshes. Durations and costs sort by their numbers, not their text.

Python keeps the rest: which runs are on the page, the filters, paging and the live refresh
(``ui/pages/runs.py``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import streamlit as st

from ui import format as fmt

#: (key in a row, header, how it sorts: "text" or "number")
COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("run", "run", "text"), ("definition", "definition", "text"), ("version", "version", "text"),
    ("status", "status", "text"), ("outcome", "outcome", "text"), ("trigger", "trigger", "text"),
    ("started_by", "started by", "text"), ("started", "started (UTC)", "text"), ("duration", "duration", "number"),
    ("cost", "cost", "number"),
)

_STATUS_CSS = "\n".join(
    f".ergon-runs td.st-{name.replace(' ', '-')} {{ color: {fg}; background: {bg}; font-weight: 600; }}"
    for name, (fg, bg) in fmt.STATUS_COLOURS.items())

CSS = """
.ergon-runs { overflow-x: auto; max-width: 100%; }
.ergon-runs table { border-collapse: collapse; width: 100%; font-size: 0.875rem; line-height: 1.35;
  font-variant-numeric: tabular-nums; }
.ergon-runs th, .ergon-runs td { padding: 0.3rem 0.4rem; text-align: left; white-space: nowrap;
  border-bottom: 1px solid rgba(49, 51, 63, 0.1); }
.ergon-runs th { position: sticky; top: 0; background: var(--st-secondary-background-color, #f0f2f6);
  font-weight: 600; cursor: pointer; user-select: none; color: rgba(49, 51, 63, 0.75); }
.ergon-runs th button { all: unset; cursor: pointer; }
.ergon-runs th button:focus-visible { outline: 2px solid var(--st-primary-color, #ff4b4b); }
.ergon-runs th[aria-sort=ascending] button::after { content: " \\2191"; }
.ergon-runs th[aria-sort=descending] button::after { content: " \\2193"; }
/* the run column stays in view when a narrow window scrolls the table sideways */
.ergon-runs td:first-child { position: sticky; left: 0; background: var(--st-background-color, #fff); }
.ergon-runs th:first-child { left: 0; z-index: 1; }
.ergon-runs tbody tr[aria-selected=true] td:first-child { background: #e3edfd; }
.ergon-runs td.num, .ergon-runs th.num { text-align: right; }
.ergon-runs td.wrap { white-space: normal; min-width: 5rem; max-width: 22rem; overflow-wrap: anywhere; }
.ergon-runs tbody tr { cursor: pointer; }
.ergon-runs tbody tr:hover { background: rgba(49, 51, 63, 0.04); }
.ergon-runs tbody tr[aria-selected=true] { background: rgba(31, 111, 235, 0.12);
  box-shadow: inset 3px 0 0 #1f6feb; }
.ergon-runs a { color: var(--st-link-color, #1f6feb); font-family: var(--st-code-font, monospace);
  text-decoration: none; }
.ergon-runs a:hover { text-decoration: underline; }
""" + _STATUS_CSS

JS = """
const COLUMNS = %s;
const esc = (s) => String(s ?? '').replace(/[&<>"']/g, (c) => '&#' + c.charCodeAt(0) + ';');

function draw(root) {
  const { rows, selected } = root.data;
  const order = rows.map((_, i) => i);
  if (root.sort) {
    const [key, dir] = root.sort;
    const numeric = COLUMNS.find((c) => c[0] === key)[2] === 'number';
    const value = (r) => (numeric ? (r[key + '_n'] ?? -Infinity) : String(r[key] || '').toLowerCase());
    order.sort((a, b) => {
      const x = value(rows[a]), y = value(rows[b]);
      return x < y ? -dir : x > y ? dir : a - b;
    });
  }
  root.querySelector('thead tr').innerHTML = COLUMNS.map(([key, label, kind]) => {
    const sort = root.sort && root.sort[0] === key ? (root.sort[1] > 0 ? 'ascending' : 'descending') : 'none';
    return `<th scope="col" data-key="${key}" aria-sort="${sort}"${kind === 'number' ? ' class="num"' : ''}>`
      + `<button type="button" title="Sort by ${esc(label)}">${esc(label)}</button></th>`;
  }).join('');
  root.querySelector('tbody').innerHTML = order.map((i) => {
    const r = rows[i];
    const cells = COLUMNS.map(([key, , kind]) => {
      if (key === 'run') {
        return `<td><a href="${esc(r.href)}" data-run="${esc(r.id)}" title="Open run ${esc(r.id)}">${esc(r.id.slice(0, 8))}</a></td>`;
      }
      const cls = key === 'status' ? `st-${esc(String(r.status).replace(/ /g, '-'))}`
        : kind === 'number' ? 'num' : key === 'outcome' ? 'wrap' : '';
      return `<td${cls ? ` class="${cls}"` : ''}>${esc(r[key])}</td>`;
    }).join('');
    return `<tr data-run="${esc(r.id)}" aria-selected="${r.id === selected}">${cells}</tr>`;
  }).join('');
}

function click(root, event) {
  const th = event.target.closest('th');
  if (th) {  // newest first, then ascending, descending, and back
    const key = th.dataset.key;
    root.sort = !root.sort || root.sort[0] !== key ? [key, 1] : root.sort[1] > 0 ? [key, -1] : null;
    draw(root);
    return;
  }
  const link = event.target.closest('a[data-run]');
  if (link) {  // a plain click opens the run here; any other click is the browser's
    if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    event.preventDefault();
    history.pushState(null, '', link.href);
    window.dispatchEvent(new PopStateEvent('popstate'));
    return;
  }
  const tr = event.target.closest('tbody tr');
  if (!tr || String(window.getSelection()).length) return;  // selecting text is no click on the row
  const id = tr.dataset.run === root.data.selected ? null : tr.dataset.run;
  root.data = { ...root.data, selected: id };
  for (const row of root.querySelector('tbody').rows) row.setAttribute('aria-selected', String(row.dataset.run === id));
  root.api.setStateValue('selected', id);
}

export default function ({ data, parentElement, setStateValue }) {
  let root = parentElement.querySelector(':scope > .ergon-runs');
  if (!root) {
    root = document.createElement('div');
    root.className = 'ergon-runs';
    root.innerHTML = '<table><thead><tr></tr></thead><tbody></tbody></table>';
    root.sort = null;
    root.addEventListener('click', (event) => click(root, event));
    parentElement.appendChild(root);
  }
  root.api = { setStateValue };
  root.data = JSON.parse(new TextDecoder().decode(data));
  draw(root);
}
"""

_table = st.components.v2.component(
    "ergon_runs_table", css=CSS, js=JS % json.dumps(COLUMNS),
    isolate_styles=False)


def runs_table(rows: Sequence[Mapping[str, Any]], *, key: str) -> str | None:
    """Draw ``rows`` (dicts with the keys of :data:`COLUMNS`, plus ``id``, ``href`` and the
    numbers ``duration_n`` and ``cost_n`` to sort by); return the selected run's id. The
    selection is the browser's (None when none) and outlives refreshes; the page draws it again
    when it comes back to the table."""
    held = st.session_state.get(key)
    selected = held.get("selected") if isinstance(held, Mapping) else None
    # JSON as bytes: Streamlit looks for data frames in a dict's values, importing pandas to do so
    payload = json.dumps({"rows": list(rows), "selected": selected}).encode()
    result = _table(data=payload, key=key, on_selected_change=lambda: None)
    return result.get("selected")
