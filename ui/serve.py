"""``python -m ui.serve run ui/app.py …`` is ``python -m streamlit run ui/app.py …`` with two
settings Streamlit has no option for.

Streamlit treats a ``pages/`` folder next to the main script as an old-style multipage app
*until the main script first calls* ``st.navigation``. On a freshly started server, a deep link
(``/run?run=<id>``, a link from a notification) as the very first request would run
``pages/run.py`` on its own — no navigation, no sign-in sidebar, no set-up — and every later
session would stay in that mode until someone opened ``/``. The dashboard always navigates with
``st.navigation`` (``ui/app.py``), so the old mode is switched off before the server starts.

Streamlit binds the listening socket itself and hands it to uvicorn; it leaves the socket's
protocol number 0, and asyncio switches Nagle's algorithm off only on accepted sockets that say
TCP. With Nagle on, every small response — a response's headers and body are two writes — waited
for the browser's delayed acknowledgement: 44 ms for each small file on a kept-alive connection,
so a cold browser fetching Streamlit's 100-odd small modules six at a time waited about 0.7 s
before it could start the dashboard (2026-12-07, this 2-core machine; a 3 KB module took 44 ms, a
170 KB font 1-3 ms). :func:`without_nagle` sets ``TCP_NODELAY`` on the listening socket, which
every accepted socket inherits.
"""

from __future__ import annotations

import socket
from typing import Any

from streamlit.runtime.pages_manager import PagesManager
from streamlit.web.cli import main


def without_nagle() -> None:
    """Make the sockets Streamlit's server binds from now on switch Nagle's algorithm off for
    every connection they accept. A Streamlit that binds otherwise is left as it is (the pages
    load, only slower)."""
    try:
        from streamlit.web.server.starlette import starlette_server

        bind = starlette_server._bind_socket
    except (ImportError, AttributeError):
        return
    if getattr(bind, "without_nagle", False):
        return

    def bind_without_nagle(*args: Any, **kwargs: Any) -> socket.socket:
        sock = bind(*args, **kwargs)
        if sock.family in (socket.AF_INET, socket.AF_INET6):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock

    bind_without_nagle.without_nagle = True  # type: ignore[attr-defined]
    starlette_server._bind_socket = bind_without_nagle


if __name__ == "__main__":
    PagesManager.uses_pages_directory = False
    without_nagle()
    main(prog_name="streamlit")
