"""What the dashboard sets up before a page draws, on every script run (each step is cheap
after the first):

* the store's schema (``init_db`` migrates once per process and database);
* a Prefect API for the runs it starts and the paused runs it resumes: the one Prefect's
  configuration names, or the local server under ``ERGON_HOME`` (started on the first visit when
  it is not running);
* once per browser session, the CLI's crash detection (runs left ``running`` by a dead process
  are marked ``crashed``), so the Runs page does not show ghosts as running.
"""

from __future__ import annotations

import streamlit as st


def boot() -> None:
    from flows import runs
    from flows.prefect.server import configured, ensure_api_url, healthy
    from flows.store import db

    db.init_db()
    api = configured()
    if api is not None and (not api.managed or healthy(api.url)):
        ensure_api_url()
    else:
        with st.spinner("Starting the local Prefect server (the first time takes up to a minute)…"):
            ensure_api_url()
    if not st.session_state.get("_ergon_stale_checked"):
        runs.prepare()  # the run owner's crash detection, as every CLI command that touches runs does
        st.session_state["_ergon_stale_checked"] = True
