"""`ergon server start|stop|status`: the Prefect API Ergon uses, and its own local server."""

from __future__ import annotations

import json
from typing import Annotated

from cyclopts import App, Parameter

from flows.cli import bounds
from flows.cli.output import err, error, out

server_app = App(
    name="server",
    help="The Prefect API Ergon uses: the one Prefect's configuration names, or Ergon's local server.",
)

@server_app.command(name="start")
def server_start(*, port: Annotated[int, Parameter(validator=bounds.ANY_PORT)] = 4200) -> int:
    """Start Ergon's local Prefect server and make it this folder's API (prefect.toml).

    Refused when Prefect's configuration already names an API (see `ergon server status --help`).

    Parameters
    ----------
    port
        Preferred port (a free one is used if taken).
    """
    from flows.prefect.server import configured, ensure_api_url, start, status, ui_url

    current = configured()
    if current is not None and not current.managed:
        return error(f"Prefect's configuration names the API {current.url} ({current.where}): Ergon uses it and "
                     "starts no server of its own", hint="unset it to use Ergon's local server", code=1)
    if current is None:
        start(port)  # the preferred port; ensure_api_url then writes it into prefect.toml
    ensure_api_url()
    info = status()
    assert info is not None, "the server answered a moment ago"
    out.print(f"Prefect server at {info.url} (pid {info.pid}); UI at {ui_url(info)}")
    out.print("[dim]prefect.toml in this folder points `prefect` commands at it[/]")
    return 0


@server_app.command(name="stop")
def server_stop() -> int:
    """Stop Ergon's local Prefect server (its line in prefect.toml stays: the next run starts it
    again on the same port)."""
    from flows.prefect.server import stop

    out.print("stopped" if stop() else "no local server was running")
    return 0


@server_app.command(name="status")
def server_status(*, json_: Annotated[bool, Parameter(name="--json")] = False) -> int:
    """Show which Prefect API Ergon uses, where that setting comes from, and whether it answers.

    Ergon uses the Prefect API that Prefect itself would use in this folder, taken from the first
    of: the environment (PREFECT_API_URL), .env, prefect.toml, pyproject.toml ([tool.prefect]),
    the active Prefect profile (prefect config set, prefect profile use, prefect cloud login).
    The API key, basic auth, TLS, CSRF and header settings come from the same places. Only when
    none names an API does Ergon start its local server (under ERGON_HOME/prefect) and write its
    address into ./prefect.toml, marked `ergon-local-server`, so every `prefect` command run here
    reaches it. An API configured later in a profile or pyproject.toml replaces that line.
    Exit 0 when the API answers, 1 otherwise.

    Parameters
    ----------
    json_
        One JSON object: api_url, ui_url, healthy, managed (Ergon's local server), pid, source
        (environment, .env, prefect.toml, pyproject.toml, profile, ergon) and where.
    """
    from flows.prefect.server import configured, healthy, status, ui_url

    info = configured() or status()
    up = info is not None and healthy(info.url)
    if json_:
        print(json.dumps({
            "api_url": info.url if info else None,
            "ui_url": ui_url(info) if info else None,
            "healthy": up,
            "managed": info.managed if info else False,
            "pid": info.pid if info else None,
            "source": info.source if info else None,
            "where": info.where if info else None,
        }))
        return 0 if up else 1
    if info is None:
        err.print("no Prefect API is configured and Ergon's local server is not running "
                  "(`ergon run` or `ergon server start` starts it)")
        return 1
    who = f"Ergon's local server, pid {info.pid}" if info.managed and info.pid else (
        "Ergon's local server" if info.managed else "configured by you")
    out.print(f"Prefect API at {info.url} ({who}; from {info.where})")
    out.print(f"UI at {ui_url(info)}")
    if not up:
        err.print("[yellow]it does not answer[/]" + (" (the next `ergon run` starts it)" if info.managed else ""))
        return 1
    return 0
