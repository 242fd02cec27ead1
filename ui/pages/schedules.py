"""Schedules: every trigger of the definitions folder — what `ergon schedules` shows and does.

One row per trigger (cron, interval, webhook, on-complete): its schedule, who it acts for, the
next run Prefect has scheduled, the last run it started and that run's status, paused. Pause,
resume and run-now go through :mod:`flows.triggers.control`, the functions the CLI uses (Prefect
schedule flag + the store's trigger state); they need a signed-in user.
"""

from __future__ import annotations

import streamlit as st

from flows.runs import StartRefused
from flows.triggers import control
from flows.trigger_refs import SCHEDULE_KINDS, UnknownTrigger
from ui import auth, nav
from ui import catalog as cat
from ui import format as fmt
from ui.cron import describe_schedule

KINDS = {"cron": "schedule", "interval": "interval", "webhook": "webhook", "on_complete": "after another run",
         "on_submission_created": "a new submission", "on_submission_updated": "a changed submission"}


def trigger_label(row) -> str:
    """``nightly · trigger 1 (schedule)`` for the store's ``nightly:0``: its definition, its
    place among that definition's ``triggers:`` (counted from 1) and its kind."""
    definition, _, index = row.name.rpartition(":")
    place = f"trigger {int(index) + 1}" if index.isdigit() else row.name
    return f"{definition or row.definition} · {place} ({KINDS.get(row.kind, row.kind)})"


st.title("Schedules")
catalog = cat.catalog()
rows = control.rows(catalog)
if not rows:
    st.info("No definition has `triggers:` yet. Add a `triggers:` list to a process (`cron`, `interval`, "
            "`webhook` or `on_complete`), then run `ergon serve` (or deploy it) so Prefect starts them.",
            icon=":material/schedule:")
    st.stop()

flash = st.session_state.pop("_schedules_flash", None)
if flash:
    st.success(flash, icon=":material/check:")

st.dataframe([{
    "trigger": trigger_label(r), "when": describe_schedule(r.schedule), "acts as": r.as_user,
    "next run": fmt.when(r.next_run_at) if r.next_run_at else "",
    "last run": fmt.when(r.last_run_at) if r.last_run_at else "",
    "last status": fmt.status(r.last_status) if r.last_status else "",
    "paused": "yes" if r.paused else ("disabled" if not r.enabled else ""),
    "id": r.name, "as written": r.schedule,
} for r in rows], hide_index=True, key="schedules_table")
st.caption("Next runs come from Prefect (they exist while `ergon serve` or a deployment has registered the "
           "schedule). Stopping `ergon serve` leaves schedules active.")

labels = {r.name: trigger_label(r) for r in rows}
name = st.selectbox("Trigger", list(labels), key="schedules_pick", format_func=labels.get)
row = next(r for r in rows if r.name == name)
if row.last_run_id:
    nav.run_link(row.last_run_id, f"Last run {row.last_run_id}")
who = auth.require_user("pause, resume or start a trigger")
if who is not None:
    left, middle, right = st.columns(3)
    try:
        if left.button("Resume" if row.paused else "Pause", key="schedules_toggle"):
            control.set_paused(row.name, not row.paused, catalog)
            st.session_state["_schedules_flash"] = (
                f"{labels[row.name]} resumed: it starts runs again ({describe_schedule(row.schedule)})." if row.paused
                else f"{labels[row.name]} paused: it starts no runs until you resume it.")
            st.rerun()
        if row.kind in SCHEDULE_KINDS and middle.button("Run now", key="schedules_run_now"):
            for started in control.run_now(row.name, catalog):
                st.success(f"Started run {started.run_id} as {row.as_user}, {started.where}.")
                nav.run_link(started.run_id)
    except UnknownTrigger as exc:
        st.error(str(exc))
    except StartRefused as exc:
        st.error("The trigger's input does not fit the definition:\n\n" + "\n".join(f"- {p.message}" for p in exc.problems))
