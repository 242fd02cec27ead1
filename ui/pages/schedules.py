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
from flows.triggers.refs import SCHEDULE_KINDS, UnknownTrigger
from ui import auth, nav
from ui import catalog as cat
from ui import format as fmt

st.title("Schedules")
catalog = cat.catalog()
rows = control.rows(catalog)
if not rows:
    st.info("No definition has `triggers:` yet (cron, interval, webhook or on_complete). "
            "`ergon serve` serves them once they do.")
    st.stop()

st.dataframe([{
    "trigger": r.name, "kind": r.kind, "schedule": r.schedule, "acts as": r.as_user,
    "next run": fmt.when(r.next_run_at) if r.next_run_at else "",
    "last run": fmt.when(r.last_run_at) if r.last_run_at else "",
    "last status": fmt.status(r.last_status) if r.last_status else "",
    "paused": "yes" if r.paused else ("disabled" if not r.enabled else ""),
} for r in rows], hide_index=True, key="schedules_table")
st.caption("Next runs come from Prefect (they exist while `ergon serve` or a deployment has registered the "
           "schedule). Stopping `ergon serve` leaves schedules active.")

name = st.selectbox("Trigger", [r.name for r in rows], key="schedules_pick")
row = next(r for r in rows if r.name == name)
if row.last_run_id:
    nav.run_link(row.last_run_id, f"Last run {row.last_run_id}")
who = auth.require_user("pause, resume or start a trigger")
if who is not None:
    left, middle, right = st.columns(3)
    try:
        if left.button("Resume" if row.paused else "Pause", key="schedules_toggle"):
            control.set_paused(row.name, not row.paused, catalog)
            st.rerun()
        if row.kind in SCHEDULE_KINDS and middle.button("Run now", key="schedules_run_now"):
            for run_id in control.run_now(row.name, catalog):
                st.success(f"Started run {run_id} as {row.as_user}.")
                nav.run_link(run_id)
    except UnknownTrigger as exc:
        st.error(str(exc))
    except StartRefused as exc:
        st.error("The trigger's input does not fit the definition:\n\n" + "\n".join(f"- {p.message}" for p in exc.problems))
