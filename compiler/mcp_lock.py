"""MCP tool servers for the checker: their entries in ``tools/servers.yaml`` and the lock of their tools.

An entry of ``servers.yaml`` with ``type: mcp`` names a Model Context Protocol server (the seed's
``tool_collections`` entry), reached over streamable HTTP (``url``, with ``headers``/``auth``) or
started as a child process speaking stdio (``command``, ``args``, ``env``, ``cwd``)::

    servers:
      - type: mcp
        id: crm                       # stable identifier; the namespace unless one is given
        name: CRM                     # display name (default: the id)
        description: Contacts and deals
        namespace: crm                # tools are `crm_<tool>` (default: the id)
        url: https://mcp.example.com/mcp
        auth: {bearer: secret:CRM_TOKEN}   # sent as `Authorization: Bearer <value>`
        headers: {X-Tenant: env:TENANT}
        timeout: 30                   # seconds per call (default 60, as HTTP tool servers)
      - type: mcp
        id: notes
        command: python               # looked up on PATH; started in the definitions folder
        args: [mcp/notes_server.py]
        env: {NOTES_TOKEN: secret:NOTES_TOKEN}

Header, ``auth`` and ``env`` values may be secret references (:mod:`compiler.secret_references`),
resolved only when a call is made. A server's tools are not asked for by the checker: ``ergon
tools sync`` asks each server and writes what it answered — each tool's name, description, input
schema and output schema — into ``tools/servers.lock.json`` beside ``servers.yaml``, which is
committed with the definitions. This module reads that lock (no other I/O, no MCP client): the
catalogue knows ``<namespace>_<tool>`` for every locked tool, and a tool node's ``input`` or a
workflow step's ``params`` are held to the locked input schema (parameters, required ones and
their JSON types, :func:`signature`). OAuth (the seed's ``auth: oauth`` and its ``oauth_*``
fields) is not built, and is refused with what to use instead.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from compiler import secret_references
from compiler.errors import DocPath, Finding, choices_hint
from compiler.tool_signatures import Parameter, Signature

#: The lock file, beside ``servers.yaml``.
LOCK_NAME = "servers.lock.json"
LOCK_VERSION = 1
#: The command that writes the lock (named by every message about it).
SYNC_COMMAND = "ergon tools sync"
#: Seconds per call unless ``timeout`` says otherwise (the HTTP tool servers' default).
DEFAULT_TIMEOUT = 60.0

#: Keys an MCP entry may have, by what they are for.
COMMON_KEYS = frozenset({"type", "id", "name", "description", "namespace", "timeout"})
HTTP_KEYS = frozenset({"url", "headers", "auth"})
STDIO_KEYS = frozenset({"command", "args", "env", "cwd"})
KEYS = COMMON_KEYS | HTTP_KEYS | STDIO_KEYS
#: The seed's OAuth fields: not built.
OAUTH_KEYS = frozenset({"oauth_app", "oauth_config", "oauth_provider", "oauth_scopes"})
_OAUTH_HINT = ("OAuth is not built: give the server a token instead, `auth: {bearer: secret:NAME}` "
               "(or a header under `headers:`)")

#: An id or namespace: it becomes the start of tool names, which models accept as [A-Za-z0-9_-].
_IDENT = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*$")


@dataclass(frozen=True)
class McpServer:
    """One ``type: mcp`` entry of ``servers.yaml``, as the runtime uses it (values unresolved)."""

    id: str
    namespace: str
    name: str
    description: str = ""
    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    #: ``auth: {bearer: …}`` (a literal or a reference): sent as ``Authorization: Bearer <value>``
    bearer: str | None = None
    command: str | None = None
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    timeout: float = DEFAULT_TIMEOUT

    def tool_name(self, tool: str) -> str:
        """The name the server's ``tool`` has in Ergon."""
        return f"{self.namespace}_{tool}"


def is_mcp(entry: Any) -> bool:
    """Whether a ``servers.yaml`` entry is an MCP server (``type: mcp``)."""
    return isinstance(entry, dict) and entry.get("type") == "mcp"


def entries(data: Any) -> tuple[DocPath, list[Any]]:
    """(the document path of the server list, its entries) of a loaded ``servers.yaml``."""
    if isinstance(data, dict):
        listed = data.get("servers")
        return ("servers",), listed if isinstance(listed, list) else []
    return (), data if isinstance(data, list) else []


def _reference_finding(value: Any, path: tuple) -> Finding | None:
    if not isinstance(value, str):
        return Finding("wrong-type", path, "a value here is a string (a literal or a secret reference)",
                       hint="quote it, or write `secret:NAME` / `env:VAR` / `prefect-secret:NAME` / `prefect-var:NAME`")
    ref = secret_references.parse(value)
    wrong = secret_references.problem(ref) if ref is not None else None
    return Finding("bad-value", path, wrong.message, hint=wrong.hint) if wrong is not None else None


def _string_map(value: Any, path: tuple, what: str) -> list[Finding]:
    if not isinstance(value, dict):
        return [Finding("wrong-type", path, f"`{what}` is a mapping of names to values",
                        hint=f"write `{what}: {{NAME: value}}`")]
    return [f for key, item in value.items() if (f := _reference_finding(item, (*path, key))) is not None]


def entry_findings(data: Any, taken: set[str] | frozenset[str] = frozenset(),
                   locked: dict[str, list[dict[str, Any]]] | None = None) -> list[Finding]:
    """What is wrong with the MCP entries of a loaded ``servers.yaml``: unknown keys, a missing or
    doubled endpoint, values of the wrong type, references that could never resolve, OAuth, ids or
    namespaces used twice; with ``locked`` (the lock's tools by server id), a server the lock does
    not know (a warning: its tools are unknown to the checker) and a locked tool whose name is
    already a tool in ``taken`` (built-ins and Python tools, which win)."""
    base, listed = entries(data)
    out: list[Finding] = []
    ids: dict[str, int] = {}
    namespaces: dict[str, int] = {}
    for i, entry in enumerate(listed):
        if not is_mcp(entry):
            continue
        at: DocPath = (*base, i)
        for key in entry:
            if key in OAUTH_KEYS or (key == "auth" and entry[key] == "oauth"):
                out.append(Finding("bad-value", (*at, key), f"`{key}`: OAuth for MCP servers is not built",
                                   hint=_OAUTH_HINT, at_key=True))
            elif key not in KEYS:
                out.append(Finding("unknown-key", (*at, key), f"an MCP server has no field `{key}`",
                                   hint=choices_hint(str(key), sorted(KEYS), what="its fields")))
        url, command = entry.get("url"), entry.get("command")
        if url is not None and command is not None:
            out.append(Finding("bad-value", (*at, "command"), "an MCP server has either `url` (streamable HTTP) or "
                               "`command` (stdio), not both", hint="keep one of them", at_key=True))
        elif url is None and command is None:
            out.append(Finding("missing-field", at, "an MCP server needs `url` (streamable HTTP) or `command` (stdio)",
                               hint="add `url: https://…/mcp`, or `command:` with `args:` to start it"))
        if url is not None and not (isinstance(url, str) and re.match(r"^https?://[^/\s]+", url)):
            out.append(Finding("bad-value", (*at, "url"), "`url` is an http:// or https:// address",
                               hint="write the server's streamable-HTTP endpoint, e.g. `https://mcp.example.com/mcp`"))
        if command is not None and not (isinstance(command, str) and command.strip()):
            out.append(Finding("wrong-type", (*at, "command"), "`command` is the program to start (a string)",
                               hint="put its arguments under `args:`"))
        for key in sorted((HTTP_KEYS - {"url"}) & set(entry)) if command is not None and url is None else ():
            out.append(Finding("bad-value", (*at, key), f"`{key}` is for a server reached by `url`; this one is started "
                               "by `command`", hint="pass values to it through `env:`", at_key=True))
        for key in sorted((STDIO_KEYS - {"command"}) & set(entry)) if url is not None and command is None else ():
            out.append(Finding("bad-value", (*at, key), f"`{key}` is for a server started by `command`; this one is "
                               "reached by `url`", hint="send values to it as `headers:`", at_key=True))
        if "headers" in entry:
            out.extend(_string_map(entry["headers"], (*at, "headers"), "headers"))
        if "env" in entry:
            out.extend(_string_map(entry["env"], (*at, "env"), "env"))
        auth = entry.get("auth")
        if auth is not None and auth != "oauth":
            if not isinstance(auth, dict) or set(auth) != {"bearer"}:
                out.append(Finding("bad-value", (*at, "auth"), "`auth` is `{bearer: <token>}`",
                                   hint="write `auth: {bearer: secret:NAME}`; other headers go under `headers:`"))
            elif (f := _reference_finding(auth["bearer"], (*at, "auth", "bearer"))) is not None:
                out.append(f)
        args = entry.get("args")
        if args is not None and not (isinstance(args, list) and all(isinstance(a, str) for a in args)):
            out.append(Finding("wrong-type", (*at, "args"), "`args` is a list of strings",
                               hint="quote numbers: `args: [\"--port\", \"8000\"]`"))
        for key in ("id", "name", "description", "cwd"):
            if key in entry and not isinstance(entry[key], str):
                out.append(Finding("wrong-type", (*at, key), f"`{key}` is a string"))
        timeout = entry.get("timeout")
        if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0):
            out.append(Finding("bad-value", (*at, "timeout"), "`timeout` is a number of seconds above 0",
                               hint=f"write seconds, e.g. `timeout: {DEFAULT_TIMEOUT:g}` (the default)"))
        ident = entry.get("id", entry.get("name"))
        if not isinstance(ident, str) or not ident:
            out.append(Finding("missing-field", at, "an MCP server needs an `id`",
                               hint="add `id: <snake_case name>`; its tools are named `<id>_<tool>` unless `namespace` says"))
            continue
        namespace = entry.get("namespace", ident)
        key_path: DocPath = (*at, "namespace") if "namespace" in entry else (*at, "id") if "id" in entry else (*at, "name")
        if not isinstance(namespace, str) or not _IDENT.match(namespace):
            out.append(Finding("bad-value", key_path, f"`{namespace}` cannot start tool names: use letters, digits, "
                               "`_` and `-`, starting with a letter",
                               hint="set `namespace:` to a short name such as `crm`"))
            continue
        if ident in ids:
            out.append(Finding("duplicate-name", (*at, "id") if "id" in entry else (*at, "name"),
                               f"servers[{ids[ident]}] already has the id `{ident}`", hint="give each MCP server its own id"))
        ids.setdefault(ident, i)
        if namespace in namespaces:
            out.append(Finding("duplicate-name", key_path, f"servers[{namespaces[namespace]}] already uses the namespace "
                               f"`{namespace}`", hint="give each MCP server its own `namespace`: it keeps their tool names apart"))
        namespaces.setdefault(namespace, i)
        if locked is None:
            continue
        if ident not in locked:
            out.append(Finding("unknown-tool", at, f"the tools of MCP server `{ident}` are not in {LOCK_NAME}: "
                               "ergon check cannot know them", hint=f"run `{SYNC_COMMAND}` (with the server running) "
                               f"and commit {LOCK_NAME}", severity="warning"))
            continue
        for tool in locked[ident]:
            full = f"{namespace}_{tool.get('name')}"
            if full in taken:
                out.append(Finding("duplicate-name", key_path, f"MCP server `{ident}` offers `{tool.get('name')}`, named "
                                   f"`{full}` here, which is already a built-in or Python tool",
                                   hint="change `namespace` (or rename the Python tool)"))
    return out


def servers(data: Any, folder: Path) -> list[McpServer]:
    """The MCP servers of a loaded ``servers.yaml`` (in ``folder``), for the runtime. An entry
    :func:`entry_findings` would refuse raises ValueError naming it (``ergon check`` says where)."""
    base, listed = entries(data)
    found: list[McpServer] = []
    for i, entry in enumerate(listed):
        if not is_mcp(entry):
            continue
        problems = [f for f in entry_findings({"servers": [entry]}) if f.severity == "error"]
        if problems:
            raise ValueError(f"{folder / 'servers.yaml'}: servers[{i}]: {problems[0].message} (`ergon check` says where)")
        ident = entry.get("id") or entry["name"]
        found.append(McpServer(
            id=ident, namespace=entry.get("namespace") or ident, name=entry.get("name") or ident,
            description=entry.get("description") or "", url=entry.get("url"),
            headers={str(k): v for k, v in (entry.get("headers") or {}).items()},
            bearer=entry["auth"]["bearer"] if isinstance(entry.get("auth"), dict) else None,
            command=entry.get("command"), args=tuple(entry.get("args") or ()),
            env={str(k): v for k, v in (entry.get("env") or {}).items()}, cwd=entry.get("cwd"),
            timeout=float(entry.get("timeout") or DEFAULT_TIMEOUT)))
    return found


def read_lock(tools_folder: Path) -> dict[str, list[dict[str, Any]]]:
    """The locked tools by server id (empty when there is no lock or it cannot be read: the
    servers' tools are then unknown, which ``ergon check`` reports where they are used)."""
    path = tools_folder / LOCK_NAME
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    servers_ = data.get("servers") if isinstance(data, dict) else None
    out: dict[str, list[dict[str, Any]]] = {}
    for ident, entry in (servers_ or {}).items() if isinstance(servers_, dict) else ():
        tools = entry.get("tools") if isinstance(entry, dict) else None
        out[ident] = [t for t in tools if isinstance(t, dict) and isinstance(t.get("name"), str)] \
            if isinstance(tools, list) else []
    return out


def render_lock(tools: dict[str, list[dict[str, Any]]]) -> str:
    """The lock file's text for ``tools`` (by server id): sorted, indented, so that a change of a
    server's tools is a readable diff."""
    body = {"version": LOCK_VERSION, "note": f"written by `{SYNC_COMMAND}`; commit it with servers.yaml",
            "servers": {ident: {"tools": sorted(listed, key=lambda t: t["name"])} for ident, listed in sorted(tools.items())}}
    return json.dumps(body, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


@dataclass(frozen=True)
class LockedTool:
    """A locked tool as the catalogue knows it: its server, its name there and its signature."""

    server: str
    tool: str
    signature: Signature


def catalogue_tools(tools_folder: Path, data: Any) -> dict[str, LockedTool]:
    """``<namespace>_<tool>`` → the locked tool, for the MCP servers of ``servers.yaml`` (``data``)
    that the lock knows; the namespace is the entry's, as at run time."""
    locked = read_lock(tools_folder)
    out: dict[str, LockedTool] = {}
    _, listed = entries(data)
    for entry in listed:
        if not is_mcp(entry):
            continue
        ident = entry.get("id", entry.get("name"))
        namespace = entry.get("namespace", ident)
        if not isinstance(ident, str) or not isinstance(namespace, str):
            continue
        for tool in locked.get(ident, []):
            out[f"{namespace}_{tool['name']}"] = LockedTool(ident, tool["name"], signature(tool))
    return out


def namespaces(data: Any) -> dict[str, str]:
    """namespace → server id of the MCP entries of a loaded ``servers.yaml``."""
    _, listed = entries(data)
    out = {}
    for entry in listed:
        if is_mcp(entry):
            ident = entry.get("id", entry.get("name"))
            namespace = entry.get("namespace", ident)
            if isinstance(ident, str) and isinstance(namespace, str):
                out[namespace] = ident
    return out


def _schema_kinds(schema: Any) -> frozenset[str] | None:
    """The JSON types a schema's ``type`` (or ``anyOf``/``oneOf`` of types) allows; None: unknown."""
    if not isinstance(schema, dict):
        return None
    kind = schema.get("type")
    if isinstance(kind, str):
        return frozenset({kind})
    if isinstance(kind, list) and all(isinstance(k, str) for k in kind):
        return frozenset(kind)
    options = schema.get("anyOf") or schema.get("oneOf")
    if isinstance(options, list) and options:
        kinds = [_schema_kinds(o) for o in options]
        if all(k is not None for k in kinds):
            return frozenset().union(*(k for k in kinds if k is not None))
    return None


def _has_refs(schema: Any) -> bool:
    if isinstance(schema, dict):
        return "$ref" in schema or "$defs" in schema or any(_has_refs(v) for v in schema.values())
    if isinstance(schema, list):
        return any(_has_refs(v) for v in schema)
    return False


def signature(tool: dict[str, Any]) -> Signature:
    """What the checker holds calls of a locked tool to: its input schema's properties (their JSON
    types where the schema gives them plainly), the required ones, and whether other names pass
    (unless ``additionalProperties: false``, as JSON Schema validation at run time lets them); the
    result is the output schema when the tool declares one (objects, members held to it when the
    schema is self-contained), else unknown."""
    found = tool.get("input_schema")
    schema: dict[str, Any] = found if isinstance(found, dict) else {}
    listed = schema.get("properties")
    props: dict[str, Any] = listed if isinstance(listed, dict) else {}
    required = set(schema.get("required") or ()) if isinstance(schema.get("required"), list) else set()
    params = {name: Parameter(name, _schema_kinds(sub), name in required) for name, sub in props.items()}
    for name in sorted(required - set(props)):
        params[name] = Parameter(name, None, True)
    output = tool.get("output_schema")
    if isinstance(output, dict):
        kinds = _schema_kinds(output) or frozenset({"object"})
        return Signature(params, schema.get("additionalProperties") is not False, kinds,
                         result_schema=None if _has_refs(output) else output)
    return Signature(params, schema.get("additionalProperties") is not False)


def unknown_hint(name: str, data: Any, tools_folder: Path) -> str | None:
    """A hint for an unknown tool name that starts with an MCP server's namespace: the server's
    locked tools, and the command that refreshes them."""
    for namespace, ident in namespaces(data).items():
        if name.startswith(f"{namespace}_"):
            locked = [f"`{namespace}_{t['name']}`" for t in read_lock(tools_folder).get(ident, [])]
            have = f"its locked tools are {', '.join(locked)}" if locked else f"{LOCK_NAME} has no tools of it"
            return (f"`{namespace}` is MCP server `{ident}`'s namespace; {have}: if the server has "
                    f"`{name[len(namespace) + 1:]}` now, run `{SYNC_COMMAND}`")
    return None
