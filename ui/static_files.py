"""Streamlit's own JavaScript, CSS and fonts, served from memory.

A cold browser asks the dashboard for about 160 files before it can show the first page:
Streamlit's main bundle, the modules it imports and the first page's element code
(``ui/preload.py``). Streamlit serves each one through Starlette's ``StaticFiles``: a look-up
and a read of every 64 KB in a worker thread, behind its session and gzip middleware. Measured
on this 2-core machine (2026-12-07), 160 of its files fetched six at a time took 0.22 s that
way (about 5 ms each) and 0.03 s from memory — and on a first load the server is also busy
importing the pages' code (``ui/warmup.py``), which every thread hand-off then waits behind.

:class:`StaticFiles` answers those requests itself, before Streamlit's middleware: a file is
read once, on its first request, and kept (the bundle is fixed for the life of the process; the
files a browser asks for come to a few MB of Streamlit's 26). It answers only what it can answer
exactly as Streamlit would, with Streamlit's content type and caching for a file whose name
carries its content's hash (a year, ``immutable``; no validators, which such a file never
needs): an unconditional ``GET`` of a file directly in ``static/js``, ``static/css`` or
``static/media`` of Streamlit's package, by a name of letters, digits, ``.``, ``_`` and ``-``
(not starting with ``.``). Anything else — another method, a conditional request, another path,
any other character, a file that is not there — goes on to Streamlit unchanged, so its security
checks, its 404 page and its fallback to the app's page stay as they are.
"""

from __future__ import annotations

import functools
import mimetypes
import os
import re
from pathlib import Path

from starlette.types import ASGIApp, Receive, Scope, Send

#: A request this module answers: ``/static/<folder>/<name>`` (under the app's root path) with
#: a plain file name — where a page's ``./static/…`` points from any of the dashboard's pages.
_ASSET = re.compile(r"/static/(js|css|media)/([A-Za-z0-9_.-]+)")
#: What Streamlit sends with a hashed asset (``starlette_static_routes``): a year, immutable.
_CACHE_CONTROL = b"public, immutable, max-age=31536000"


@functools.cache
def _folder() -> Path:
    import streamlit

    return Path(streamlit.__file__).parent / "static" / "static"


@functools.cache
def _names() -> frozenset[tuple[str, str]]:
    """(folder, file name) of every file in Streamlit's ``static/js``, ``css`` and ``media``: only
    these are answered, so that a request for any other name neither touches the disk nor
    grows :data:`_loaded`."""
    found: set[tuple[str, str]] = set()
    for folder in ("js", "css", "media"):
        try:
            found.update((folder, entry.name) for entry in os.scandir(_folder() / folder) if entry.is_file())
        except OSError:
            continue
    return frozenset(found)


#: The files answered so far: (folder, name) → (content, content type). At most the files of
#: :func:`_names`; they never change while the server runs.
_loaded: dict[tuple[str, str], tuple[bytes, bytes]] = {}


def _asset(folder: str, name: str) -> tuple[bytes, bytes] | None:
    """``(content, content type)`` of Streamlit's ``static/<folder>/<name>``, or None if there is
    no such file (then Streamlit answers as it would)."""
    key = (folder, name)
    if key not in _names():
        return None
    asset = _loaded.get(key)
    if asset is None:
        try:
            content = (_folder() / folder / name).read_bytes()  # once per file, a few KB to 1 MB
        except OSError:
            return None
        kind = mimetypes.guess_type(name)[0] or "text/plain"  # as Starlette's file response names it
        if kind.startswith("text/"):
            kind += "; charset=utf-8"
        asset = _loaded[key] = (content, kind.encode())
    return asset


def app_path(scope: Scope) -> str:
    """The request's path under the app's root path (``/run`` when the app is mounted at
    ``/ergon`` and ``/ergon/run`` was asked for)."""
    path, root = scope.get("path", ""), scope.get("root_path", "")
    return path[len(root):] if root and path.startswith(root) else path


def _conditional(scope: Scope) -> bool:
    """Whether the request asks only for a newer copy (``If-None-Match``, ``If-Modified-Since``):
    Streamlit answers those, with its validators."""
    return any(name in (b"if-none-match", b"if-modified-since") for name, _ in scope.get("headers") or ())


class StaticFiles:
    """ASGI middleware: a ``GET`` of one of Streamlit's asset files (:data:`_ASSET`) answered
    from memory; every other request passed to the app as it is."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope.get("method") == "GET" and not _conditional(scope):
            found = _ASSET.fullmatch(app_path(scope))
            asset = _asset(found.group(1), found.group(2)) if found else None
            if asset is not None:
                content, kind = asset
                await send({"type": "http.response.start", "status": 200, "headers": [
                    (b"content-type", kind), (b"content-length", str(len(content)).encode()),
                    (b"cache-control", _CACHE_CONTROL)]})
                await send({"type": "http.response.body", "body": content})
                return
        await self.app(scope, receive, send)
