"""The local Prefect server Ergon starts serves a UI that talks to that server, wherever it runs.

Prefect's UI asks its server for ``/ui-settings`` and sends every API call to the ``api_url``
found there. When the default port is held by another server, Ergon's server comes up on a free
port; its UI must still call Ergon's API, not the default port's (which would show another
server's runs and answer 404 for Ergon's).
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import urllib.request

import pytest

from flows.prefect import server

pytestmark = pytest.mark.prefect


@pytest.fixture
def default_port_taken():
    """The default port held by something else (a listening socket, unless another server already holds it)."""
    holder = socket.socket()
    try:
        holder.bind(("127.0.0.1", server.DEFAULT_PORT))
        holder.listen()
    except OSError:
        holder.close()
        holder = None  # somebody else's server is there already: just as good
    yield
    if holder is not None:
        holder.close()


@pytest.fixture
def own_home(tmp_path, monkeypatch):
    """A fresh ERGON_HOME and no PREFECT_API_URL: ``ergon`` starts a local server of its own."""
    monkeypatch.setenv("ERGON_HOME", str(tmp_path))
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    monkeypatch.delenv("PREFECT_UI_API_URL", raising=False)
    yield tmp_path
    server.stop()


def test_the_ui_of_a_server_off_the_default_port_calls_that_server(default_port_taken, own_home):
    info = server.start()
    assert info.managed and f":{server.DEFAULT_PORT}/" not in info.url, info.url
    base = info.url.removesuffix("/api")
    with urllib.request.urlopen(f"{base}/ui-settings", timeout=10) as response:
        settings = json.loads(response.read())
    assert settings["api_url"] == info.url, "the UI must send its API calls to Ergon's server"
    assert server.ui_url(info) == base

    # from a folder of its own, as a user's project: a prefect.toml where the tests run (the
    # demo's, say) would name another API
    status = subprocess.run([sys.executable, "-m", "flows.cli", "server", "status"], capture_output=True, text=True,
                            timeout=60, cwd=own_home)
    assert status.returncode == 0, status.stderr
    assert info.url in status.stdout and f"UI at {base}" in status.stdout
