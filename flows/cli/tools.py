"""`ergon tools sync|list`: the MCP servers' tools, recorded for `ergon check` and the runs.

``sync`` connects to each MCP server of ``<definitions>/tools/servers.yaml`` and writes the tools
it lists (names, descriptions, input and output schemas) to ``tools/servers.lock.json``, which is
committed with the definitions: ``ergon check`` reads it instead of asking the servers, and a run
refuses a call whose tool the server no longer offers as locked. ``list`` prints the locked tools.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

from cyclopts import App, Parameter

from flows.cli.output import error, out

tools_app = App(name="tools", help="MCP tool servers: record their tools for `ergon check` (sync), list them.")


def _folder(definitions: str | None) -> Path:
    from flows.settings import definitions_dir

    base = Path(definitions) if definitions else definitions_dir()
    return base / "tools"


def _needs_prefect(folder: Path) -> bool:
    """Whether a value of the MCP servers names a Prefect Secret block or Variable."""
    from flows.tools import mcp_servers

    values = [v for s in mcp_servers.load(folder) for v in (*s.headers.values(), *s.env.values(), s.bearer or "")]
    return any(v.startswith(("prefect-secret:", "prefect-var:")) for v in values)


@tools_app.command(name="sync")
def sync(
    *,
    server: Annotated[list[str] | None, Parameter(name="--server", negative=())] = None,
    definitions: Annotated[str | None, Parameter(name="--definitions")] = None,
) -> int:
    """Ask each MCP server of tools/servers.yaml for its tools and write tools/servers.lock.json.

    Parameters
    ----------
    server
        Only this server (by id; repeat for more): the others keep their locked tools.
    definitions
        The definitions folder (default: ERGON_DEFINITIONS, else ./definitions).
    """
    import asyncio

    from compiler.mcp_lock import LOCK_NAME
    from flows.tools import mcp_servers

    folder = _folder(definitions)
    if not (folder / "servers.yaml").is_file():
        return error(f"there is no {folder / 'servers.yaml'}", hint="MCP servers are listed there with `type: mcp`")
    try:
        if _needs_prefect(folder):
            import flows.prefect.secrets  # noqa: F401  (registers the prefect-secret: / prefect-var: resolvers)
        tools, failures = asyncio.run(mcp_servers.sync(folder, server))
    except ValueError as exc:
        return error(exc, hint="`ergon check` shows where")
    if failures:
        for message in failures.values():
            error(message)
        return error(f"{folder / LOCK_NAME} was not written", hint="start the servers, or sync the others with --server ID",
                     code=1)
    for ident, listed in tools.items():
        out.print(f"{ident}: {len(listed)} tool{'' if len(listed) == 1 else 's'}")
    out.print(f"wrote {folder / LOCK_NAME}")
    return 0


@tools_app.command(name="list")
def list_(
    *,
    definitions: Annotated[str | None, Parameter(name="--definitions")] = None,
    json_: Annotated[bool, Parameter(name="--json")] = False,
) -> int:
    """List the MCP servers' tools recorded in tools/servers.lock.json, by the names definitions use.

    Parameters
    ----------
    definitions
        The definitions folder (default: ERGON_DEFINITIONS, else ./definitions).
    json_
        Print them as JSON (name, server, description, input_schema).
    """
    from compiler import mcp_lock
    from flows.tools import mcp_servers

    folder = _folder(definitions)
    if not (folder / "servers.yaml").is_file():
        return error(f"there is no {folder / 'servers.yaml'}")
    try:
        servers = mcp_servers.load(folder)
    except ValueError as exc:
        return error(exc, hint="`ergon check` shows where")
    locked = mcp_lock.read_lock(folder)
    rows = [{"name": s.tool_name(t["name"]), "server": s.id, "description": t.get("description", ""),
             "input_schema": t.get("input_schema")} for s in servers for t in locked.get(s.id, [])]
    if json_:
        print(json.dumps(rows, indent=2))
        return 0
    for row in rows:
        out.print(f"{row['name']}  ({row['server']})  {row['description']}")
    missing = [s.id for s in servers if s.id not in locked]
    if missing:
        return error(f"not synced: {', '.join(missing)}", hint="run `ergon tools sync`", code=1)
    return 0
