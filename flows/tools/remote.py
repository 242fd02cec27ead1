"""HTTP tool servers (the seed's custom-tools contract), registered as ordinary tools.

``<definitions>/tools/servers.yaml``::

    servers:
      - name: crm                        # used in messages and as the tools' `source`
        url: https://tools.example.com/api
        headers:                         # values: literal, `env:VAR`, `secret:NAME`,
                                         # `prefect-secret:NAME` or `prefect-var:NAME`
          Authorization: secret:CRM_TOOLS_TOKEN
        timeout: 30                      # seconds per call (default 60)

(a bare list of servers is accepted too; entries with ``type: mcp`` are MCP servers,
:mod:`flows.tools.mcp_servers`). ``GET url`` answers ``{src, title, description,
tools: [{name, description, input_schema}]}``; each tool becomes a :class:`ToolSpec` whose call
``POST``\\ s ``{tool_use: {id, tool_name, tool_input}, metadata}`` and returns the answer's
``content`` (parsed when it is a JSON object or array, else the string; ``files`` and ``metadata``
of the answer are not used yet). A non-2xx answer or ``is_error: true`` is a :class:`ToolError`
carrying the server's ``error`` message.

Header values are resolved at each call, never stored or logged: ``env:VAR`` reads ``$VAR``,
``secret:NAME`` opens Ergon's encrypted secret ``NAME`` (:mod:`flows.secrets`),
``prefect-secret:NAME`` reads the Prefect Secret block ``NAME`` and ``prefect-var:NAME`` the
Prefect Variable ``NAME`` (:mod:`flows.prefect.secrets`). What they resolve to is redacted from
every record as Ergon's own secrets are.

Unlike :mod:`flows.tools.http`, server URLs may be loopback or private: an operator wrote them in
the definitions folder, a model never chooses them. Discovery is lazy (:func:`configure` only
reads the file; :func:`discover_pending` asks the servers when an unknown tool is first needed),
so a server that is down fails only the calls that need it.
"""

from __future__ import annotations

import json
import logging
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import yaml

from flows.tools import REGISTRY, ToolSpec
from flows.tools.context import current
from flows.tools.errors import ToolError

log = logging.getLogger("ergon.tools")

DEFAULT_TIMEOUT = 60.0
#: Largest tool-server answer read (a tool result goes into a model prompt or the context).
MAX_RESPONSE_BYTES = 10 * 1024 * 1024


@dataclass
class ServerConfig:
    name: str
    url: str
    headers: dict[str, str] = field(default_factory=dict)
    timeout: float = DEFAULT_TIMEOUT
    discovered: bool = False


#: Configured servers by name (filled by :func:`configure`).
SERVERS: dict[str, ServerConfig] = {}


class ToolServerError(ToolError):
    """A tool server could not be reached or answered outside the contract."""


def _parse(folder: Path) -> list[ServerConfig]:
    path = folder / "servers.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or []
    entries = data.get("servers", []) if isinstance(data, dict) else data
    servers = []
    for i, entry in enumerate(entries or []):
        if isinstance(entry, dict) and entry.get("type") == "mcp":
            continue  # an MCP server: flows.tools.mcp_servers
        if not isinstance(entry, dict) or not isinstance(entry.get("url"), str):
            raise ValueError(f"{path}: servers[{i}] needs a `url`")
        servers.append(ServerConfig(
            name=str(entry.get("name") or entry["url"]), url=entry["url"],
            headers={str(k): str(v) for k, v in (entry.get("headers") or {}).items()},
            timeout=float(entry.get("timeout") or DEFAULT_TIMEOUT),
        ))
    return servers


def configure(folder: str | Path) -> list[str]:
    """Read ``folder/servers.yaml`` (no network); returns the server names. Its MCP servers'
    locked tools are registered now (:func:`flows.tools.mcp_servers.configure`, no network either)."""
    from flows.tools import mcp_servers

    names = []
    for server in _parse(Path(folder)):
        SERVERS.setdefault(server.name, server)
        names.append(server.name)
    mcp_servers.configure(folder)
    return names


def resolve_header(value: str) -> str:
    """A header value with ``env:VAR`` / ``secret:NAME`` / ``prefect-secret:NAME`` /
    ``prefect-var:NAME`` replaced (LookupError if unset, missing or malformed)."""
    from flows import secrets

    try:
        return secrets.resolve_reference(value)
    except (secrets.SecretError, secrets.SecretKeyError) as exc:
        raise LookupError(f"header value `{value}`: {exc}") from None
    except LookupError as exc:
        raise LookupError(f"header value `{value}`: {exc}") from None


def _headers(server: ServerConfig, tool: str) -> dict[str, str]:
    try:
        return {k: resolve_header(v) for k, v in server.headers.items()}
    except LookupError as exc:
        raise ToolServerError(tool, f"tool server `{server.name}`: {exc}") from None


def _spec(server: ServerConfig, entry: dict[str, Any]) -> ToolSpec:
    name = entry["name"]
    schema = entry.get("input_schema") or {"type": "object"}
    jsonschema.Draft202012Validator.check_schema(schema)

    async def call(**tool_input: Any) -> Any:
        return await call_remote(server, name, tool_input)

    return ToolSpec(name=name, description=entry.get("description") or name, parameters=schema, fn=call,
                    is_async=True, validate=None, source=f"remote:{server.name}")


async def _discover(server: ServerConfig) -> list[str]:
    headers = {"Accept": "application/json", **_headers(server, f"server:{server.name}")}
    async with httpx.AsyncClient(timeout=server.timeout, trust_env=False) as client:
        try:
            response = await client.get(server.url, headers=headers)
            response.raise_for_status()
            listing = response.json()
        except (httpx.HTTPError, ValueError) as exc:
            raise ToolServerError(f"server:{server.name}", f"tool server at {server.url} did not list its tools: {exc}") from exc
    names = []
    for entry in (listing or {}).get("tools", []) if isinstance(listing, dict) else []:
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            continue
        if entry["name"] in REGISTRY and REGISTRY[entry["name"]].source != f"remote:{server.name}":
            log.warning("tool server %s offers `%s`, which is already a tool: ignored", server.name, entry["name"])
            continue
        try:
            REGISTRY[entry["name"]] = _spec(server, entry)
        except jsonschema.SchemaError as exc:
            log.warning("tool server %s: `%s` has an invalid input_schema (%s): ignored",
                        server.name, entry["name"], exc.message)
            continue
        names.append(entry["name"])
    server.discovered = True
    return names


async def discover_pending() -> list[str]:
    """Ask every configured server not yet asked for its tools; returns the new tool names.

    A server that fails is logged and asked again next time.
    """
    names: list[str] = []
    for server in list(SERVERS.values()):
        if server.discovered:
            continue
        try:
            names.extend(await _discover(server))
        except ToolError as exc:
            log.warning("%s", exc)
    return names


async def aregister_servers(folder: str | Path) -> list[str]:
    """Read ``folder/servers.yaml`` and register every server's tools now; returns their names.

    Unlike lazy discovery, a server that cannot list its tools raises :class:`ToolServerError`.
    """
    names: list[str] = []
    for server_name in configure(folder):
        names.extend(await _discover(SERVERS[server_name]))
    return names


def register_servers(folder: str | Path) -> list[str]:
    """:func:`aregister_servers` for synchronous callers (CLI commands; not inside an event loop)."""
    import asyncio

    return asyncio.run(aregister_servers(folder))


def _content(value: Any) -> Any:
    if isinstance(value, str) and value[:1] in ("{", "["):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


async def call_remote(server: ServerConfig, tool_name: str, tool_input: dict[str, Any]) -> Any:
    """POST one tool use to ``server`` and return its content (see the module docs)."""
    ctx = current()
    use_id = f"toolu_{uuid.uuid4().hex}"
    payload = {
        "tool_use": {"id": use_id, "tool_name": tool_name, "tool_input": tool_input},
        "metadata": {k: v for k, v in {"run_id": ctx.run_id, "visit_id": ctx.visit_id,
                                       "node_id": ctx.node_id}.items() if v},
    }
    headers = {"Content-Type": "application/json", "Accept": "application/json", **_headers(server, tool_name)}
    async with httpx.AsyncClient(timeout=server.timeout, trust_env=False) as client:
        async with client.stream("POST", server.url, json=payload, headers=headers) as response:
            raw = bytearray()
            async for chunk in response.aiter_bytes():
                raw.extend(chunk)
                if len(raw) > MAX_RESPONSE_BYTES:
                    raise ToolServerError(tool_name, f"the tool server's answer is larger than {MAX_RESPONSE_BYTES} bytes")
    try:
        answer = json.loads(bytes(raw) or b"null")
    except ValueError:
        answer = None
    if not response.is_success or not isinstance(answer, dict) or answer.get("is_error"):
        message = answer.get("error") or answer.get("content") if isinstance(answer, dict) else None
        raise ToolError(tool_name, f"the tool server answered {response.status_code}: "
                                   f"{message or bytes(raw[:200]).decode(errors='replace') or 'no detail'}")
    return _content(answer.get("content"))
