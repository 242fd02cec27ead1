"""The dashboard's web server: Streamlit's app (``ui/app.py``) and the sign-in endpoints
(``ui/web.py``) as one ASGI application.

``streamlit run ui/server.py`` finds the ``st.App`` below and serves it with uvicorn (the same
server ``streamlit run`` uses for a plain script), so the sign-in form and the dashboard share
one origin, one port and one process: the cookie the form sets is the one every page's
WebSocket sends back. As it starts, it imports what the first page needs in the background
(``ui/warmup.py``), and the page it serves asks for the first page's element code at once
(``ui/preload.py``).

A dashboard setting the dashboard cannot use (``ERGON_UI_SESSION_HOURS``, see ``ui/session.py``)
stops the server here, as it starts, with one sentence naming it: ``ergon ui`` checks the same
before it starts Streamlit, and this check covers a server started any other way.
"""

from __future__ import annotations

import sys
from pathlib import Path

import streamlit as st

# `streamlit run ui/server.py` puts ui/ on sys.path, not the project root (see ui/app.py).
_ROOT = str(Path(__file__).resolve().parents[1])
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from starlette.middleware import Middleware  # noqa: E402

from ui import preload, static_files, warmup  # noqa: E402
from ui.session import setting_error  # noqa: E402
from ui.web import routes  # noqa: E402

if (_problem := setting_error()) is not None:
    raise SystemExit(f"error: {_problem}")

warmup.start()  # the first page's imports, once the server is up (ui/warmup.py)

# Streamlit's JavaScript is served from memory (ui/static_files.py); the first page's element
# code is asked for with the page (ui/preload.py)
app = st.App(Path(__file__).with_name("app.py"), routes=routes(),
             middleware=[Middleware(static_files.StaticFiles), Middleware(preload.Preload)])
