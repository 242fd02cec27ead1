"""The local Prefect server that `ergon run` uses when no ``PREFECT_API_URL`` is set.

A persistent server (not Prefect's ephemeral one) because the ephemeral server loses task-run
records when the process exits, costs 3-15 s per run to start, and cannot be reached by the
other processes that must resume or cancel a run. It runs detached, with its home (SQLite
database, logs) under ``ERGON_HOME/prefect``; its address is kept in ``server.json`` there so
every later command reuses it.

Prefect's UI sends its API calls to the ``api_url`` its server hands out at ``/ui-settings``,
which Prefect derives from the *default* port unless told otherwise. When the default port is
taken (another server), Ergon's server runs on a free port, so it is started with its own port
and API address (``PREFECT_SERVER_API_PORT``, ``PREFECT_UI_API_URL``): the UI at the address
``ergon server status`` prints then shows Ergon's runs, not the other server's. A
``PREFECT_UI_API_URL`` the user set (a reverse proxy) is kept.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from flows.prefect.config import PREFECT_DEFAULTS
from flows.settings import ergon_home_path, prefect_home

DEFAULT_PORT = 4200
START_TIMEOUT_SECONDS = 120


@dataclass
class ServerInfo:
    url: str
    pid: int | None
    managed: bool  # started by Ergon (vs. PREFECT_API_URL given by the user)


def _state_file() -> Path:
    return prefect_home() / "server.json"


def _state_file_path() -> Path:
    """Where :func:`_state_file` is, without creating the folder (reading only)."""
    return ergon_home_path() / "prefect" / "server.json"


def healthy(api_url: str, timeout: float = 2.0) -> bool:
    try:
        with urllib.request.urlopen(f"{api_url}/health", timeout=timeout) as resp:
            return resp.status == 200
    except OSError:
        return False


def _pid_alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return True


def _free_port(preferred: int) -> int:
    for port in (preferred, 0):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return s.getsockname()[1]
    raise RuntimeError("no free port")


def status() -> ServerInfo | None:
    """The server Ergon would use, if it is up."""
    url = os.environ.get("PREFECT_API_URL")
    if url:
        return ServerInfo(url, None, False) if healthy(url) else None
    state = _state_file()
    if not state.exists():
        return None
    info = json.loads(state.read_text())
    if _pid_alive(info.get("pid")) and healthy(info["url"]):
        return ServerInfo(info["url"], info["pid"], True)
    return None


def start(port: int = DEFAULT_PORT) -> ServerInfo:
    """Start (or reuse) the local server and wait until it answers."""
    current = status()
    if current:
        return current
    port = _free_port(port)
    url = f"http://127.0.0.1:{port}/api"
    home = prefect_home()
    env = {**os.environ, **{k: os.environ.get(k, v) for k, v in PREFECT_DEFAULTS.items()}}
    env.update({
        "PREFECT_HOME": str(home),
        "PREFECT_SERVER_EPHEMERAL_ENABLED": "false",
        "PREFECT_API_DATABASE_CONNECTION_URL": os.environ.get(
            "PREFECT_API_DATABASE_CONNECTION_URL", f"sqlite+aiosqlite:///{home / 'prefect.db'}"
        ),
    })
    env.pop("PREFECT_API_URL", None)
    # the UI must call this server's API, not the default port's (see the module docstring)
    env.update({"PREFECT_SERVER_API_HOST": "127.0.0.1", "PREFECT_SERVER_API_PORT": str(port)})
    if not (env.get("PREFECT_UI_API_URL") or env.get("PREFECT_SERVER_UI_API_URL")):
        env["PREFECT_UI_API_URL"] = url
    log = open(home / "server.log", "ab")
    proc = subprocess.Popen(
        [sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1", "--port", str(port)],
        env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
    )
    _state_file().write_text(json.dumps({"url": url, "pid": proc.pid, "port": port}))
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the Prefect server exited (code {proc.returncode}); see {home / 'server.log'}")
        if healthy(url):
            return ServerInfo(url, proc.pid, True)
        time.sleep(0.3)
    raise RuntimeError(f"the Prefect server did not answer within {START_TIMEOUT_SECONDS} s; see {home / 'server.log'}")


def stop() -> bool:
    """Stop the server Ergon started; False when none was running."""
    state = _state_file()
    if not state.exists():
        return False
    info = json.loads(state.read_text())
    pid = info.get("pid")
    stopped = False
    if _pid_alive(pid):
        os.killpg(os.getpgid(pid), signal.SIGTERM)
        for _ in range(100):
            if not _pid_alive(pid):
                break
            time.sleep(0.1)
        else:
            os.killpg(os.getpgid(pid), signal.SIGKILL)
        stopped = True
    state.unlink(missing_ok=True)
    return stopped


def ui_url(info: ServerInfo | None = None) -> str | None:
    """The address of Prefect's UI for the server Ergon uses (``info``, else the one it would use):
    ``PREFECT_UI_URL`` when set, else the API's address without ``/api``; None when there is no
    server to name. No request is made (a link needs no health check)."""
    if explicit := os.environ.get("PREFECT_UI_URL"):
        return explicit.rstrip("/")
    api = info.url if info is not None else os.environ.get("PREFECT_API_URL")
    if not api and _state_file_path().exists():
        api = json.loads(_state_file_path().read_text()).get("url")
    if not api:
        return None
    api = api.rstrip("/")
    return api.removesuffix("/api")


def ensure_api_url() -> str:
    """Point this process at a Prefect API: the user's, or a local server started on demand."""
    url = os.environ.get("PREFECT_API_URL")
    if url:
        return url
    info = start()
    os.environ["PREFECT_API_URL"] = info.url
    return info.url
