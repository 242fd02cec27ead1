"""``python -m ui.serve run ui/app.py …`` is ``python -m streamlit run ui/app.py …`` with one
setting Streamlit has no option for.

Streamlit treats a ``pages/`` folder next to the main script as an old-style multipage app
*until the main script first calls* ``st.navigation``. On a freshly started server, a deep link
(``/run?run=<id>``, a link from a notification) as the very first request would run
``pages/run.py`` on its own — no navigation, no sign-in sidebar, no set-up — and every later
session would stay in that mode until someone opened ``/``. The dashboard always navigates with
``st.navigation`` (``ui/app.py``), so the old mode is switched off before the server starts.
"""

from __future__ import annotations

from streamlit.runtime.pages_manager import PagesManager
from streamlit.web.cli import main

if __name__ == "__main__":
    PagesManager.uses_pages_directory = False
    main(prog_name="streamlit")
