"""The Ergon dashboard (``ergon ui``): navigation only — each page is a file in ``pages/``.

Add a page with one line in :data:`PAGES` (a ``st.Page`` of ``pages/<name>.py``). The first
page is the default one, served at ``/``; the others at their url path (``/run?run=<id>``).
What the pages read comes from Ergon's store, and what they do goes through the functions the
CLI uses (see ``ui/auth.py`` for who may do what).
"""

from __future__ import annotations

import sys
from pathlib import Path

import streamlit as st

# `streamlit run ui/app.py` puts ui/ on sys.path, not the project root (the editable install
# usually covers it; a plain checkout does not).
_ROOT = str(Path(__file__).resolve().parents[1])
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from ui import auth, boot, warmup  # noqa: E402

PAGES = [
    st.Page("pages/runs.py", title="Runs", icon=":material/list:", default=True),
    st.Page("pages/run.py", title="Run", icon=":material/account_tree:", url_path="run"),
    st.Page("pages/inbox.py", title="Task inbox", icon=":material/inbox:", url_path="inbox"),
    st.Page("pages/submissions.py", title="Submissions", icon=":material/dataset:", url_path="submissions"),
    st.Page("pages/artifacts.py", title="Artifacts", icon=":material/description:", url_path="artifacts"),
    st.Page("pages/definitions.py", title="Definitions", icon=":material/schema:", url_path="definitions"),
    st.Page("pages/schedules.py", title="Schedules", icon=":material/schedule:", url_path="schedules"),
]

# The icon is a file of this package: a `:material/…:` page icon makes the browser fetch the
# glyph from an outside font host (and fail offline). Everything the page loads is served here.
ICON = Path(__file__).with_name("assets") / "icon.svg"
st.set_page_config(page_title="Ergon", page_icon=str(ICON), layout="wide")
page = st.navigation(PAGES)
boot.boot()
auth.sidebar()
if auth.viewing_requires_login() and auth.user_name() is None:
    st.title("Ergon")
    st.info("Sign in (in the sidebar) to see this dashboard.", icon=":material/lock:")
else:
    page.run()
warmup.first_page_drawn()  # the other pages' imports may start now (ui/warmup.py)
