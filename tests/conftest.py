"""Test-session setup shared by every test package.

Prefect reads its settings when it is first imported, so the session's Prefect API URL and
Ergon home are fixed here, at collection time, before any test module imports prefect: a free
port is reserved for a real local Prefect server, which the ``prefect_api`` fixture starts only
when a test needs it (compiler-only runs never pay for it).
"""

from __future__ import annotations

import os
import socket
import tempfile
from pathlib import Path

import pytest

_SESSION_HOME = Path(tempfile.mkdtemp(prefix="ergon-test-"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


if not os.environ.get("ERGON_TEST_KEEP_ENV"):
    os.environ["ERGON_HOME"] = str(_SESSION_HOME)
    os.environ.pop("ERGON_DATABASE_URL", None)
    _PORT = int(os.environ.get("ERGON_TEST_PREFECT_PORT") or _free_port())
    os.environ["PREFECT_API_URL"] = f"http://127.0.0.1:{_PORT}/api"
    os.environ["LITELLM_OFFLINE_MODE"] = "true"

from flows.settings import configure_prefect_env  # noqa: E402

configure_prefect_env()


@pytest.fixture(scope="session")
def prefect_api():
    """A real local Prefect server (started once per session, stopped at the end)."""
    from flows import server

    port = int(os.environ["PREFECT_API_URL"].rsplit(":", 1)[1].split("/")[0])
    already = server.healthy(os.environ["PREFECT_API_URL"])
    if not already:
        url = os.environ.pop("PREFECT_API_URL")
        try:
            info = server.start(port)
        finally:
            os.environ["PREFECT_API_URL"] = url
        assert info.url == url, f"the test server came up at {info.url}, expected {url}"
    yield os.environ["PREFECT_API_URL"]
    if not already:
        server.stop()


@pytest.fixture
def store(tmp_path, monkeypatch):
    """A fresh, migrated Ergon store in a temporary SQLite file."""
    from flows.store import db

    url = f"sqlite:///{tmp_path / 'ergon.db'}"
    monkeypatch.setenv("ERGON_DATABASE_URL", url)
    db.init_db(url)
    yield url
    db.dispose_all()
