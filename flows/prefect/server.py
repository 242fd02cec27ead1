"""Which Prefect API Ergon uses, and the local server it starts when the user configured none.

Prefect's configuration decides (:mod:`flows.prefect.user_settings`, in Prefect's own order:
the environment, ``.env``, ``prefect.toml``, ``pyproject.toml``, the active profile). Only when
no source names an API does Ergon start its own local server — the embedded default of a first
run — and then it writes that server's address into the folder's ``prefect.toml``
(:mod:`flows.prefect.project_api`), so every ``prefect`` command run in the folder reaches it
with nothing exported. An address the user configures later wins: Ergon's line in
``prefect.toml`` would hide a profile (Prefect reads the file before profiles), so Ergon removes
its line as soon as a profile or ``pyproject.toml`` names an API.

The local server is a persistent one, not Prefect's ephemeral server: the ephemeral server loses
task-run records when the process exits, costs 3-15 s per run to start, and cannot be reached by
the other processes that must resume or cancel a run. It runs detached, with its home (SQLite
database, logs) under ``ERGON_HOME/prefect``; its address and pid are kept in ``server.json``
there. A stopped or crashed server is started again on the same port when it is free, so
workers pointed at it reconnect.

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
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from flows.errors import ErgonError
from flows.prefect import project_api, user_settings
from flows.prefect.config import SERVER_DEFAULTS
from flows.settings import ergon_home_path, prefect_home

DEFAULT_PORT = 4200
START_TIMEOUT_SECONDS = 120


class ServerStartFailed(ErgonError):
    """Ergon's local Prefect server could not be started (its log says why)."""


@dataclass
class ServerInfo:
    """The Prefect API Ergon uses, and where that choice comes from."""

    url: str
    pid: int | None  # the local server's process, when Ergon started it
    managed: bool  # Ergon's local server (vs. an API the user configured)
    source: str = "ergon"  # user_settings.Found.source, or "ergon" for a server just started
    where: str = ""  # for people: the variable, file or profile that names the API


def _state_file() -> Path:
    return prefect_home() / "server.json"


def _state_file_path() -> Path:
    """Where :func:`_state_file` is, without creating the folder (reading only)."""
    return ergon_home_path() / "prefect" / "server.json"


def _state() -> dict:
    """What ``server.json`` says of the local server last started from this ``ERGON_HOME``."""
    try:
        return json.loads(_state_file_path().read_text())
    except (OSError, ValueError):
        return {}


def healthy(api_url: str, timeout: float = 2.0) -> bool:
    try:
        with urllib.request.urlopen(f"{api_url.rstrip('/')}/health", timeout=timeout) as resp:
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
    """``preferred`` when a server can listen on it now, else a free port. The probe binds as the
    server's own socket does (``SO_REUSEADDR``): connections of a server that stopped a moment
    ago linger in ``TIME_WAIT`` on its port, and a plain bind took that for a port in use, so a
    restarted server moved to another port while the runs waiting on the old one lost it."""
    for port in (preferred, 0):
        with socket.socket() as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return s.getsockname()[1]
    raise ServerStartFailed("no free port on 127.0.0.1 for Ergon's local Prefect server")


def _port_of(url: str) -> int | None:
    try:
        return urllib.parse.urlsplit(url).port
    except ValueError:
        return None


def configured() -> ServerInfo | None:
    """The API Ergon uses in this folder: the one the user's configuration names (also when
    Ergon's line in ``prefect.toml`` still hides it: :func:`ensure_api` removes that line), else
    Ergon's line; None when nothing names one. Starts nothing, changes nothing."""
    if _exported is not None and os.environ.get("PREFECT_API_URL") == _exported.url:
        return _exported  # this process exported it: where it was configured is still the answer
    hit = _user_api_below_ergons_line() or user_settings.first(user_settings.API_URL)
    if hit is None or not hit.by_user:
        return None
    url = str(hit.value).rstrip("/")
    state = _state()
    ours = _is_ergons(hit) or url == str(state.get("url", "")).rstrip("/")
    pid = state.get("pid") if ours and url == str(state.get("url", "")).rstrip("/") else None
    return ServerInfo(url, pid if _pid_alive(pid) else None, ours, hit.source, hit.where)


def _is_ergons(hit: user_settings.Found) -> bool:
    return hit.source == "prefect.toml" and project_api.is_ergons()


def _user_api_below_ergons_line() -> user_settings.Found | None:
    """An API the user named in ``pyproject.toml`` or a profile that Ergon's line in
    ``prefect.toml`` hides (Prefect reads ``prefect.toml`` first)."""
    hits = user_settings.found(user_settings.API_URL)
    if not hits or not _is_ergons(hits[0]):
        return None
    return next((h for h in hits[1:] if h.by_user and h.source in ("pyproject.toml", "profile")), None)


def status() -> ServerInfo | None:
    """The API Ergon would use, if it answers now."""
    info = configured()
    if info is None:
        state = _state()  # a local server still up although nothing names it any more
        if state.get("url") and _pid_alive(state.get("pid")) and healthy(state["url"]):
            return ServerInfo(state["url"], state["pid"], True, "ergon", str(_state_file_path()))
        return None
    return info if healthy(info.url) else None


def start(port: int = DEFAULT_PORT) -> ServerInfo:
    """Start (or reuse) the local server on ``port`` (a free one when it is taken) and wait until
    it answers. Does not make it the configured API: :func:`ensure_api_url` does that."""
    state = _state()
    if state.get("url") and _pid_alive(state.get("pid")) and healthy(state["url"]):
        return ServerInfo(state["url"], state["pid"], True, "ergon", str(_state_file_path()))
    port = _free_port(port)
    url = f"http://127.0.0.1:{port}/api"
    home = prefect_home()
    env = {**os.environ, **{k: os.environ.get(k, v) for k, v in SERVER_DEFAULTS.items()}}
    env.update({
        "PREFECT_HOME": str(home),
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
    # started in its own home: a project's prefect.toml or .env configures its clients, not this server
    proc = subprocess.Popen(
        [sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1", "--port", str(port)],
        env=env, cwd=home, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
    )
    _state_file().write_text(json.dumps({"url": url, "pid": proc.pid, "port": port}))
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise ServerStartFailed(f"Ergon's local Prefect server exited while starting (code {proc.returncode}); "
                                    f"see {home / 'server.log'}, then run the command again")
        if healthy(url):
            return ServerInfo(url, proc.pid, True, "ergon", str(_state_file_path()))
        time.sleep(0.3)
    raise ServerStartFailed(f"Ergon's local Prefect server did not answer within {START_TIMEOUT_SECONDS} s; "
                            f"see {home / 'server.log'}")


def stop() -> bool:
    """Stop the server Ergon started; False when none was running. Its line in ``prefect.toml``
    stays: the next command that needs Prefect starts it again on the same port."""
    state = _state_file_path()
    if not state.exists():
        return False
    info = _state()
    pid = int(info.get("pid") or 0)
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
    if info is None:
        info = configured()
    api = info.url if info is not None else _state().get("url")
    if not api:
        return None
    if api.startswith("https://api.prefect.cloud/api/accounts/"):  # Cloud: the app's workspace page
        return api.replace("https://api.prefect.cloud/api/", "https://app.prefect.cloud/", 1).rstrip("/")
    return api.rstrip("/").removesuffix("/api")


def ensure_api_url() -> str:
    """The address of :func:`ensure_api`."""
    return ensure_api().url


def ensure_api() -> ServerInfo:
    """Point this process at the Prefect API the folder's configuration names — the user's, or
    Ergon's local server, started (and written into ``prefect.toml``) when none is named; returns
    it with where it comes from."""
    hidden = _user_api_below_ergons_line()
    if hidden is not None:  # the user configured an API since Ergon wrote its line: theirs wins
        project_api.forget()
        print(f"ergon: Prefect API {hidden.value} ({hidden.where}) is used from now on; Ergon's local server "
              "line was removed from prefect.toml", file=sys.stderr)
        exported = os.environ.get("PREFECT_API_URL")
        if exported and exported.rstrip("/") == str(_state().get("url", "")).rstrip("/"):
            os.environ.pop("PREFECT_API_URL")  # exported by an Ergon process for its local server
    info = configured()
    if info is None:
        info = start(_port_of(str(_state().get("url", ""))) or DEFAULT_PORT)
        project_api.write(info.url)
    elif info.managed and not healthy(info.url):
        source, where = info.source, info.where
        info = start(_port_of(info.url) or DEFAULT_PORT)
        if project_api.is_ergons() or user_settings.first(user_settings.API_URL) is None:
            project_api.write(info.url)  # the same port when it was free; a new one otherwise
        info = ServerInfo(info.url, info.pid, True, source, where)
    _export(info)
    return info


#: The API :func:`ensure_api` exported into this process's environment, with where it came from.
_exported: ServerInfo | None = None


def _export(info: ServerInfo) -> None:
    """This process, and the processes it starts, use ``info.url``. Prefect reads its settings
    when imported: a process that imported it already is told again."""
    global _exported
    _exported = info
    url = info.url
    os.environ["PREFECT_API_URL"] = url
    if "prefect.context" in sys.modules:
        from prefect.context import refresh_global_settings_context

        refresh_global_settings_context()
