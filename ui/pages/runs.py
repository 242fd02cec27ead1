"""Runs: every run, newest first, filtered and paginated in the database; live rows refresh.

Filters (status, definition, date range, text) go to :func:`flows.store.runs.list_runs` (``light=True``),
which counts and fetches one page with SQL, so the page costs the same over 100 or 100,000
runs. The table is a fragment that re-draws itself every few seconds while "Live" is on, so
running rows move on without a reload. The table is plain HTML (``ui/runs_table.py``, not
``st.dataframe``: the first page then loads no data grid): the run column links to each run's
page (one click), a column's header sorts the rows shown, and a click on a row selects its run
and offers a link to it below. The selection belongs to a run, not to a row position: when a
live refresh brings a new run in at the top, the selection moves down with its run.
"""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta

import streamlit as st

from flows.store import runs as run_store
from flows.store import visits as visit_store
from flows.store.models import RUN_STATUSES
from ui import format as fmt
from ui import nav
from ui.runs_table import runs_table

REFRESH_SECONDS = 3
PAGE_SIZES = (25, 50, 100, 200)

st.title("Runs")

c1, c2, c3, c4 = st.columns([2, 2, 2, 3])
statuses = c1.multiselect("Status", RUN_STATUSES, key="runs_status", placeholder="any")
definition = c2.selectbox("Definition", run_store.definition_names_with_runs(), index=None, key="runs_definition",
                          placeholder="any")
dates = c3.date_input("Created between", value=(), key="runs_dates", format="YYYY-MM-DD")
text = c4.text_input("Search", key="runs_text", placeholder="run id, definition, started by, outcome")
o1, o2 = st.columns([1, 5])
size = o1.selectbox("Rows per page", PAGE_SIZES, index=1, key="runs_size")
live = o2.toggle("Live", value=True, key="runs_live", help=f"Re-draw the table every {REFRESH_SECONDS} s")

since = until = None
if isinstance(dates, tuple | list) and dates:
    since = datetime.combine(dates[0], time.min, tzinfo=UTC)
    until = datetime.combine(dates[-1], time.min, tzinfo=UTC) + timedelta(days=1)

# The filters decide the number of pages; a changed filter goes back to page 1.
filters = (tuple(statuses), definition, since, until, text.strip(), size)
previous = st.session_state.get("_runs_filters")
if previous is not None and previous != filters:
    st.session_state.pop("runs_page", None)
st.session_state["_runs_filters"] = filters


def _table() -> None:
    page = st.session_state.get("runs_page", 1)
    rows, total = run_store.list_runs(statuses or None, definition, text.strip() or None, since, until,
                                      limit=size, offset=(page - 1) * size, light=True)
    now = datetime.now(UTC)
    spans = visit_store.top_level_spans(r["id"] for r in rows)
    table = [{
        "id": r["id"], "href": nav.run_url(r["id"]),
        # a sub-process run is marked as such, under the name of what it runs
        "definition": ("↳ " if r["parent_run_id"] else "") + r["definition_name"],
        "version": "draft" if r["definition_version"] is None else f"v{r['definition_version']}",
        "status": fmt.status(r["status"]),
        "outcome": r["outcome"] or "",
        "trigger": "sub-process" if r["parent_run_id"] else r["trigger"],
        "started_by": r["started_by"] or "",
        "started": fmt.when(r["started_at"] or r["created_at"]),
        "duration_n": (seconds := fmt.run_seconds(r["started_at"], r["ended_at"], spans.get(r["id"], []),
                                                  now=None if r["status"] not in fmt.ACTIVE_RUN else now)),
        "duration": fmt.duration(seconds),
        "cost_n": r["cost_usd"] or 0.0,
        "cost": fmt.cost(r["cost_usd"]),
    } for r in rows]
    pages = max(1, -(-total // size))
    first = (page - 1) * size + 1 if rows else 0
    st.caption(f"{first}–{first + len(rows) - 1 if rows else 0} of {total:,} run(s), newest first"
               + (f" · refreshed {fmt.when_md(now)} UTC" if live else ""))
    if not rows:
        filtered = bool(statuses or definition or since or text.strip())
        st.info("No run matches these filters: clear one to see more." if filtered else
                "No runs yet. Start one from **Definitions** (each process has a start form), with "
                "`ergon run NAME`, or let a schedule start one (`ergon serve`).", icon=":material/info:")
        return
    chosen = runs_table(table, key="runs_table")
    chosen_row = next((r for r in rows if r["id"] == chosen), None)
    if chosen_row is not None:
        nav.run_link(chosen, f"Open run {chosen} ({chosen_row['definition_name']}, {chosen_row['status']})")
    if pages > 1:
        st.pagination(pages, default=min(page, pages), key="runs_page", max_visible_pages=9)


st.fragment(_table, run_every=REFRESH_SECONDS if live else None)()
