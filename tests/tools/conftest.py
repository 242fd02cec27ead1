"""Fixtures for the tool tests: a fresh store per test (copied from a migrated template), a run,
and the tool context set to that run."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from flows.store import db


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    """ERGON_HOME = tmp_path (documents live under it)."""
    monkeypatch.delenv("ERGON_DATABASE_URL", raising=False)
    monkeypatch.setenv("ERGON_HOME", str(tmp_path))
    return tmp_path


@pytest.fixture
def store(home, migrated_template) -> str:
    """An empty, migrated store under ``home``; its URL (overrides the package-wide fixture)."""
    shutil.copy(migrated_template, home / "ergon.db")
    url = db.database_url()
    db.init_db(url)
    yield url
    db.dispose_all()


@pytest.fixture
def run_ctx(store):
    """A run and a running visit; the tool context points at them for the test's duration."""
    import flows.tools.builtins  # noqa: F401  (registers the built-ins)
    from flows.store import runs as run_store
    from flows.store import visits as visit_store
    from flows.tools.context import CURRENT, ToolContext

    run = run_store.create_run("tools_test", content={"name": "tools_test"})
    visit = visit_store.start_visit(run.id, "agent", "agent")
    token = CURRENT.set(ToolContext(run_id=run.id, visit_id=visit.id, node_id="agent", started_by="tester"))
    yield CURRENT.get()
    CURRENT.reset(token)


@pytest.fixture
def local_server():
    """Start a stdlib HTTP server on 127.0.0.1 with ``handler(request_handler)`` for every method.

    Usage: ``port = local_server(handle)``; ``handle`` gets the BaseHTTPRequestHandler and writes
    the answer itself. Servers stop at the end of the test.
    """
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    servers = []

    def start(handle) -> int:
        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output quiet
                pass

            def body(self) -> bytes:
                return self.rfile.read(int(self.headers.get("Content-Length") or 0))

            def send(self, status: int, data: bytes = b"", headers: dict | None = None):
                self.send_response(status)
                for k, v in (headers or {"Content-Type": "application/json"}).items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                try:
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout tests)

            do_GET = do_POST = do_PUT = do_DELETE = lambda self: handle(self)

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        servers.append(server)
        return server.server_address[1]

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()
