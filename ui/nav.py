"""Where the pages are, and links between them (a run, a task), in one place.

Paths are relative to ``ui/app.py``, as ``st.navigation``, ``st.page_link`` and
``st.switch_page`` expect them; links out go to Prefect's own UI (a run's flow run, a visit's task run). Deep links carry the object in the query string
(``run?run=<id>``, ``inbox?task=<id>``, ``submissions?submission=<id>&value=<version id>``), so
a link can be shared or bookmarked.
"""

from __future__ import annotations

import streamlit as st

RUNS = "pages/runs.py"
RUN = "pages/run.py"
INBOX = "pages/inbox.py"
ARTIFACTS = "pages/artifacts.py"
DEFINITIONS = "pages/definitions.py"
SUBMISSIONS = "pages/submissions.py"


def run_link(run_id: str, label: str | None = None, help: str | None = None) -> None:
    st.page_link(RUN, label=label or f"Run {run_id}", icon=":material/account_tree:", query_params={"run": run_id},
                 help=help)


def task_link(task_id: str, label: str | None = None) -> None:
    st.page_link(INBOX, label=label or f"Task {task_id}", icon=":material/inbox:", query_params={"task": task_id})


def submission_link(submission_id: str, label: str | None = None, value: str | None = None) -> None:
    """A link to a submission's page, opened on one of its value versions when ``value`` is given."""
    query = {"submission": submission_id, **({"value": value} if value else {})}
    st.page_link(SUBMISSIONS, label=label or f"Submission {submission_id}", icon=":material/dataset:",
                 query_params=query)


def submission_url(submission_id: str, value: str | None = None) -> str:
    """A relative URL of a submission's page (on one value version), for link columns of tables."""
    return f"submissions?submission={submission_id}" + (f"&value={value}" if value else "")


def run_url(run_id: str) -> str:
    """A relative URL of a run's page, for link columns of tables."""
    return f"run?run={run_id}"


def prefect_url(kind: str, obj_id: str) -> str | None:
    """The page of a Prefect flow run (``kind`` ``flow-run``) or task run (``task-run``) in
    Prefect's UI — the local server's, or ``PREFECT_UI_URL`` — or None when no server is known."""
    from flows.prefect.server import ui_url

    base = ui_url()
    return f"{base}/runs/{kind}/{obj_id}" if base else None


def param(name: str) -> str | None:
    """A query-string parameter (first value), or None."""
    value = st.query_params.get(name)
    return value or None
