"""The code of the first page's elements, asked for with the page itself.

Streamlit's JavaScript loads the code of most elements (a multiselect, a date input, the Runs
page's table) only when the first such element arrives from the server, which is when the
script run has sent it: on a cold browser the page then waited another 0.5 s or more for about
40 small files after the script had finished (2026-12-07, on this 2-core machine). This module
adds ``<link rel="modulepreload">`` tags for those files to the HTML page Streamlit serves, so
the browser fetches them while it starts Streamlit's JavaScript and the server runs the script.

Which files: Streamlit's main bundle names each element's file and the files it needs (Vite's
``__vite__mapDeps`` list); :func:`files` reads them from it for :data:`ELEMENTS`. A Streamlit
whose bundle reads otherwise gets no tags, and the page loads as it would without them.

The page also tells Streamlit's JavaScript where the server is (:func:`base_script`). Left to
itself, a page opened by its address (``/run?run=…``, a link in a notification, a reload) first
asks ``/run/_stcore/health`` — ``run`` might be where the server is mounted — gets a 404, waits
its minimum retry delay and asks ``/_stcore/health``: 0.18 s of every such load (2026-12-07). The
server knows which path it served: the dashboard's pages are one segment deep, so the page's
address without its last segment (``/`` itself for the first page) is where the server is, as
the browser sees it — behind a proxy that adds a prefix too.
"""

from __future__ import annotations

import functools
import gzip
import json
import re
from pathlib import Path

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ui.static_files import app_path

#: The elements of the Runs page (the first page) whose code Streamlit loads lazily: its filters,
#: its table (``ui/runs_table.py``), the sidebar's sign-in link (``st.html``) and its paging.
ELEMENTS = ("Multiselect", "Selectbox", "DateInput", "TextInput", "Checkbox", "BidiComponent", "Html", "Pagination")


@functools.cache
def files() -> tuple[str, ...]:
    """The files of :data:`ELEMENTS` and those they import, as paths under Streamlit's static
    folder (``static/js/…``), not those the page's HTML already preloads; () when unreadable."""
    import streamlit

    folder = Path(streamlit.__file__).parent / "static"
    try:
        html = (folder / "index.html").read_text(encoding="utf-8")
        entry = re.search(r'<script type="module" crossorigin src="\./(static/js/index\.[\w-]+\.js)"', html)
        if entry is None:
            return ()
        bundle = (folder / entry.group(1)).read_text(encoding="utf-8")
        names = re.search(r"m\.f=(\[[^\]]*\])", bundle)
        if names is None:
            return ()
        table = json.loads(names.group(1))
        wanted: list[str] = []
        for element in ELEMENTS:
            found = re.search(r"import\(`\./" + element + r"\.[\w-]+\.js`\),__vite__mapDeps\(\[([\d,]+)\]\)", bundle)
            if found is None:
                continue
            for index in found.group(1).split(","):
                name = "static/js/" + table[int(index)].removeprefix("./")
                if name not in wanted and f'href="./{name}"' not in html and (folder / name).is_file():
                    wanted.append(name)
        return tuple(wanted)
    except (OSError, ValueError, IndexError):
        return ()


def base_script(path: str) -> bytes:
    """A script that sets Streamlit's ``BACKEND_BASE_URL`` (read from ``window.__streamlit`` when
    its JavaScript starts) to the page's address without its page (the last segment when the
    server saw ``/<page>``, nothing when it saw ``/``), unless the page already sets one; empty
    for any other path, where Streamlit finds the server by itself."""
    if path in ("", "/"):
        drop = 0
    elif re.fullmatch(r"/[^/]+/?", path):
        drop = 1
    else:
        return b""
    return ("<script>(function(){var p=location.pathname.replace(/\\/+$/,'').split('/');"
            f"p.splice(p.length-{drop},{drop});"
            "window.__streamlit=Object.assign({BACKEND_BASE_URL:location.origin+p.join('/')+'/'},"
            "window.__streamlit||{});})();</script>").encode()


def _gunzip(data: bytes) -> bytes | None:
    try:
        return gzip.decompress(data)
    except (OSError, EOFError):
        return None


def tags() -> bytes:
    return "".join(f'<link rel="modulepreload" crossorigin href="./{name}">' for name in files()).encode()


class Preload:
    """ASGI middleware: the script of :func:`base_script` and the tags of :func:`tags` before
    ``</head>`` of the HTML page Streamlit serves (its one page, under any of the dashboard's
    paths); everything else passes as it is."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "GET":
            await self.app(scope, receive, send)
            return
        start: Message | None = None
        body: list[bytes] = []

        async def rewrite(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                headers = dict(message.get("headers") or [])
                if headers.get(b"content-type", b"").startswith(b"text/html") and message.get("status") == 200:
                    start = message
                    return
            if start is None:
                await send(message)
                return
            body.append(message.get("body", b""))
            if message.get("more_body"):
                return
            page = b"".join(body)
            headers = start.get("headers") or []
            # Streamlit compresses the page for a browser (it asks with Accept-Encoding: gzip); the
            # page goes out rewritten and uncompressed (a few KB, sent once per load)
            gzipped = any(k.lower() == b"content-encoding" and v.strip().lower() == b"gzip" for k, v in headers)
            plain = _gunzip(page) if gzipped else page
            if plain is not None and b'src="./static/js/index.' in plain:  # Streamlit's page, not ours (sign-in)
                page = plain.replace(b"</head>", base_script(app_path(scope)) + tags() + b"</head>", 1)
                drop = {b"content-length", b"content-encoding"}
            else:
                drop = {b"content-length"}
            kept = [(k, v) for k, v in headers if k.lower() not in drop]
            await send({**start, "headers": [*kept, (b"content-length", str(len(page)).encode())]})
            await send({"type": "http.response.body", "body": page})

        await self.app(scope, receive, rewrite)
