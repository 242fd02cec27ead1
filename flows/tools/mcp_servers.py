"""MCP tool servers (Model Context Protocol), through the official MCP Python SDK, as ordinary tools.

The ``type: mcp`` entries of ``<definitions>/tools/servers.yaml`` (fields:
:mod:`compiler.mcp_lock`) name servers reached over streamable HTTP (``url``; ``headers`` and
``auth: {bearer: …}`` sent with every request) or started as a child process speaking stdio
(``command``, ``args``, ``env``; started in the definitions folder, ``cwd`` relative to it). A
server's tool ``search`` is the tool ``<namespace>_search`` (the namespace defaults to the
server's ``id``).

Which tools exist, and what they take, is what ``ergon tools sync`` (:func:`sync`) recorded in
``tools/servers.lock.json``: :func:`configure` registers one :class:`~flows.tools.ToolSpec` per
locked tool, with the locked input schema (so :func:`flows.tools.invoke.invoke` checks the
arguments, and agents are offered the tool, without asking the server). Nothing connects until a
call. A run's first call to a server opens a session (for stdio, starts the process) and lists
the server's tools; the run's later calls to that server use the same session
(:mod:`flows.tools.mcp_sessions`: closed when the run ends, after a while unused, or when a call
on it fails other than by the tool's own answer; a call outside any run has its own). Each call
is refused if its tool is gone from the listing or its input or output schema differs from the
lock — the message names ``ergon tools sync`` — then made.

A call's result is the tool's structured content when it returns one (an MCP tool that declares
an output schema), else its text: one text block parsed as JSON when it is a JSON object or array,
several joined by newlines; other blocks (images, resources) come back as their MCP JSON form. An
answer with ``isError``, a protocol error, a server that cannot be reached and a call that takes
longer than the server's ``timeout`` (default 60 s; then also a :class:`TimeoutError`, for
``retry_on``) are each a :class:`~flows.tools.errors.ToolError` naming the server.

Header, bearer and ``env`` values may be ``secret:`` / ``env:`` / ``prefect-secret:`` /
``prefect-var:`` references, resolved as each session opens
(:func:`flows.tools.remote.resolve_header`), redacted from every record and never logged. A stdio
server gets the SDK's default environment (``PATH``, ``HOME``…, not this process's secrets) plus
its ``env``. As for HTTP tool servers, an MCP server's address may be local: an operator wrote
it, a model never chooses it.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TextIO

import yaml

from compiler import mcp_lock
from compiler.mcp_lock import LOCK_NAME, SYNC_COMMAND, McpServer
from flows.tools import REGISTRY, ToolSpec, mcp_sessions
from flows.tools.errors import ToolError

log = logging.getLogger("ergon.tools")

#: Configured MCP servers by id (filled by :func:`configure`), with the folder of their servers.yaml.
SERVERS: dict[str, tuple[McpServer, Path]] = {}


class McpServerError(ToolError):
    """An MCP server could not be reached, answered with an error, or no longer matches the lock."""


class McpTimeout(McpServerError, TimeoutError):
    """An MCP server did not answer within its ``timeout``."""


def load(folder: str | Path) -> list[McpServer]:
    """The MCP servers of ``folder/servers.yaml`` (ValueError for an entry ``ergon check`` refuses)."""
    path = Path(folder) / "servers.yaml"
    return mcp_lock.servers(yaml.safe_load(path.read_text(encoding="utf-8")), Path(folder))


def configure(folder: str | Path) -> list[str]:
    """Register the locked tools of ``folder``'s MCP servers (no connection); returns their names.

    A name that is already a tool (a built-in, a Python tool or another server's) keeps it;
    ``ergon check`` refuses such a clash.
    """
    folder = Path(folder)
    locked = mcp_lock.read_lock(folder)
    names = []
    for server in load(folder):
        SERVERS[server.id] = (server, folder)
        for tool in locked.get(server.id, []):
            name = server.tool_name(tool["name"])
            existing = REGISTRY.get(name)
            if existing is not None and existing.source != f"mcp:{server.id}":
                log.warning("MCP server %s offers `%s`, which is already a tool: ignored", server.id, name)
                continue
            REGISTRY[name] = _spec(server, folder, tool)
            names.append(name)
    return names


def _spec(server: McpServer, folder: Path, tool: dict[str, Any]) -> ToolSpec:
    name = server.tool_name(tool["name"])

    async def call(**arguments: Any) -> Any:
        return await call_tool(server, folder, tool, arguments)

    return ToolSpec(name=name, description=tool.get("description") or name,
                    parameters=tool.get("input_schema") or {"type": "object"}, fn=call, is_async=True,
                    validate=None, source=f"mcp:{server.id}")


def _resolve(server: McpServer, tool: str, value: str) -> str:
    from flows.tools.remote import resolve_header

    try:
        return resolve_header(value)
    except LookupError as exc:
        raise McpServerError(tool, f"MCP server `{server.id}`: {exc}") from None


def _where(server: McpServer) -> str:
    return f"MCP server `{server.id}` ({server.url or server.command})"


@asynccontextmanager
async def _client(server: McpServer, folder: Path, tool: str, errlog: TextIO, refused: list[int]) -> AsyncIterator[Any]:
    """A connected, initialised MCP client for ``server`` (its own session, closed on exit).
    ``refused`` receives the status of each HTTP answer above 399: the SDK's error says only that
    the server answered with an error, and a 401 should say so."""
    import httpx2
    from mcp import Client, StdioServerParameters, stdio_client
    from mcp.client.streamable_http import streamable_http_client

    if server.url is not None:
        headers = {k: _resolve(server, tool, v) for k, v in server.headers.items()}
        if server.bearer is not None:
            headers["Authorization"] = f"Bearer {_resolve(server, tool, server.bearer)}"
        timeout = httpx2.Timeout(server.timeout)

        async def note(response: Any) -> None:
            if response.status_code >= 400:
                refused.append(response.status_code)

        async with httpx2.AsyncClient(headers=headers, timeout=timeout, trust_env=False,
                                      event_hooks={"response": [note]}) as http:
            async with Client(streamable_http_client(server.url, http_client=http), cache=None,
                              read_timeout_seconds=server.timeout) as client:
                yield client
        return
    assert server.command is not None  # one of url and command, by mcp_lock.servers
    base = folder.parent  # the definitions folder
    params = StdioServerParameters(
        command=server.command, args=list(server.args),
        env={k: _resolve(server, tool, v) for k, v in server.env.items()},
        cwd=base / server.cwd if server.cwd else base)
    async with Client(stdio_client(params, errlog=errlog), cache=None, read_timeout_seconds=server.timeout) as client:
        yield client


def _stderr() -> TextIO | None:
    """This process's standard error when it is a real file (a stdio server's own messages go
    there during ``ergon tools sync``), else None."""
    try:
        sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):
        return None
    return sys.stderr


def _leaf(exc: BaseException) -> BaseException:
    """The first exception inside (nested) exception groups: what went wrong, not the task group."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _failure(server: McpServer, tool: str, exc: BaseException, refused: list[int]) -> McpServerError:
    from mcp import MCPError
    from mcp.types import CONNECTION_CLOSED

    leaf = _leaf(exc)
    if isinstance(leaf, McpServerError):
        return leaf
    if refused and not isinstance(leaf, TimeoutError):
        status = refused[-1]
        why = " (its token is missing or wrong: `auth` / `headers`)" if status in (401, 403) else ""
        return McpServerError(tool, f"{_where(server)} answered HTTP {status}{why}")
    if isinstance(leaf, TimeoutError):
        return McpTimeout(tool, f"{_where(server)} did not answer within {server.timeout:g} s")
    if isinstance(leaf, MCPError) and leaf.code == CONNECTION_CLOSED:
        return McpServerError(tool, f"{_where(server)} closed the connection before it answered (its process "
                                    f"ended, or it went away)")
    if isinstance(leaf, MCPError):
        return McpServerError(tool, f"{_where(server)} refused the request: {leaf}")
    return McpServerError(tool, f"{_where(server)} could not be reached: {type(leaf).__name__}: {leaf}")


async def _listing(client: Any) -> list[dict[str, Any]]:
    """Every tool the server lists (all pages), as the lock records them."""
    tools: list[dict[str, Any]] = []
    cursor: str | None = None
    for _ in range(100):  # a server that pages for ever must not hang a call
        page = await client.list_tools(cursor=cursor)
        for t in page.tools:
            entry: dict[str, Any] = {"name": t.name, "description": t.description or "",
                                     "input_schema": t.input_schema or {"type": "object"}}
            if t.output_schema:
                entry["output_schema"] = t.output_schema
            tools.append(json.loads(json.dumps(entry)))  # plain JSON, as read back from the lock
        cursor = page.next_cursor
        if not cursor:
            break
    return tools


async def list_tools(server: McpServer, folder: Path, errlog: TextIO | None = None) -> list[dict[str, Any]]:
    """The tools ``server`` lists now (McpServerError when it cannot say)."""
    import anyio

    what = f"server:{server.id}"
    refused: list[int] = []
    try:
        with anyio.fail_after(server.timeout), open(os.devnull, "w") as devnull:
            async with _client(server, folder, what, errlog or _stderr() or devnull, refused) as client:
                return await _listing(client)
    except Exception as exc:  # noqa: BLE001  every failure becomes one sentence naming the server
        raise _failure(server, what, exc, refused) from None


async def call_tool(server: McpServer, folder: Path, locked: dict[str, Any], arguments: dict[str, Any]) -> Any:
    """Call the locked tool ``locked`` of ``server`` (see the module docs)."""
    import anyio
    from mcp import MCPError
    from mcp.types import CONNECTION_CLOSED, REQUEST_TIMEOUT

    name = server.tool_name(locked["name"])

    @asynccontextmanager
    async def connect(notes: dict[str, Any]) -> AsyncIterator[Any]:
        with open(os.devnull, "w") as errlog:
            async with _client(server, folder, name, errlog, notes.setdefault("refused", [])) as client:
                yield client

    async def prepare(client: Any) -> dict[str, dict[str, Any]]:
        with anyio.fail_after(server.timeout):
            return {t["name"]: t for t in await _listing(client)}

    async with mcp_sessions.session((server.id, str(folder)), connect, prepare, f"ergon-mcp-{server.id}") as session:
        try:
            with anyio.fail_after(server.timeout):
                await session.ready()
                assert session.client is not None and session.prepared is not None
                _check_lock(server, name, locked, session.prepared.get(locked["name"]))
                result = await session.client.call_tool(locked["name"], arguments)
        except Exception as exc:  # noqa: BLE001
            leaf = _leaf(exc)
            # the server's answer to this request (the lock's check, a refused request) leaves the
            # session as it was; anything else may have broken it: the next call opens a new one
            if not (isinstance(leaf, McpServerError)
                    or (isinstance(leaf, MCPError) and leaf.code not in (CONNECTION_CLOSED, REQUEST_TIMEOUT))):
                session.drop()
            raise _failure(server, name, exc, session.notes.get("refused", [])) from None
    if result.is_error:
        raise McpServerError(name, f"{_where(server)} answered with an error: {_text(result.content) or 'no detail'}")
    if result.structured_content is not None:
        return result.structured_content
    return _content(result.content)


def _check_lock(server: McpServer, name: str, locked: dict[str, Any], live: dict[str, Any] | None) -> None:
    """Refuse a call whose tool the server no longer has, or has with other schemas than the lock's."""
    if live is None:
        raise McpServerError(name, f"{_where(server)} no longer offers `{locked['name']}`, which {LOCK_NAME} lists: "
                                   f"run `{SYNC_COMMAND}` to record its tools again, then `ergon check`")
    for key, what in (("input_schema", "input"), ("output_schema", "output")):
        if live.get(key) != locked.get(key):
            raise McpServerError(name, f"the {what} schema of `{locked['name']}` on {_where(server)} differs from the one "
                                       f"in {LOCK_NAME}: run `{SYNC_COMMAND}` to record it again, then `ergon check`")


def _text(blocks: list[Any]) -> str:
    return "\n".join(b.text for b in blocks if getattr(b, "type", None) == "text")


def _content(blocks: list[Any]) -> Any:
    if blocks and all(getattr(b, "type", None) == "text" for b in blocks):
        text = _text(blocks)
        if len(blocks) == 1 and text[:1] in ("{", "["):
            try:
                return json.loads(text)
            except ValueError:
                return text
        return text
    return [b.model_dump(mode="json", by_alias=True, exclude_none=True) for b in blocks]


async def sync(folder: str | Path, only: list[str] | None = None) -> tuple[dict[str, list[dict[str, Any]]], dict[str, str]]:
    """Ask the MCP servers of ``folder`` for their tools and write ``servers.lock.json``.

    ``only`` limits the servers asked (the others keep their locked tools). Returns (the tools
    written, by server id; the failures, by server id); with any failure nothing is written.
    Servers no longer in ``servers.yaml`` leave the lock.
    """
    folder = Path(folder)
    servers = load(folder)
    unknown = sorted(set(only or ()) - {s.id for s in servers})
    if unknown:
        raise ValueError(f"no MCP server has the id {', '.join(f'`{u}`' for u in unknown)} in {folder / 'servers.yaml'} "
                         f"(ids: {', '.join(s.id for s in servers) or 'none'})")
    old = mcp_lock.read_lock(folder)
    tools: dict[str, list[dict[str, Any]]] = {}
    failures: dict[str, str] = {}
    for server in servers:
        if only and server.id not in only:
            if server.id in old:
                tools[server.id] = old[server.id]
            continue
        try:
            tools[server.id] = await list_tools(server, folder)
        except McpServerError as exc:
            failures[server.id] = exc.message
    if not failures:
        (folder / LOCK_NAME).write_text(mcp_lock.render_lock(tools), encoding="utf-8")
    return tools, failures
