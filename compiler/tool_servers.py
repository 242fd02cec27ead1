"""What ``ergon check`` checks in a definitions folder's ``tools/servers.yaml`` (HTTP tool servers).

The file is read at run time by :mod:`flows.tools.remote`; its header values may be secret
references (``secret:NAME``, ``env:VAR``, ``prefect-secret:NAME``, ``prefect-var:NAME``). A
reference that could never resolve — no name, or a name Prefect refuses — is a ``bad-value`` at
the header's value, as it is for an environment's ``api_key``. Any other header value is a
literal and is sent as written. Nothing else of the file is checked here: a file the loader
cannot read is left to the run, which reports it with the server's name. Its MCP servers
(``type: mcp``) are checked by :mod:`compiler.mcp_lock`: their fields, their references, and
whether ``servers.lock.json`` knows their tools.
"""

from __future__ import annotations

from pathlib import Path

from compiler import mcp_lock, secret_references
from compiler.errors import Finding
from compiler.source import LoadedDocument, load_file

FILE_NAME = "servers.yaml"


def header_findings(doc: LoadedDocument) -> list[Finding]:
    """A ``bad-value`` for each header value of ``doc`` that is a reference with a problem."""
    data = doc.data
    base: tuple[str, ...] = ("servers",) if isinstance(data, dict) else ()
    entries = data.get("servers") if isinstance(data, dict) else data
    out = []
    for i, entry in enumerate(entries if isinstance(entries, list) else []):
        headers = entry.get("headers") if isinstance(entry, dict) and not mcp_lock.is_mcp(entry) else None
        for key, value in (headers.items() if isinstance(headers, dict) else ()):
            ref = secret_references.parse(value) if isinstance(value, str) else None
            wrong = secret_references.problem(ref) if ref is not None else None
            if wrong is not None:
                out.append(Finding("bad-value", (*base, i, "headers", key), wrong.message, hint=wrong.hint))
    return out


def load_servers(tools_folder: Path) -> tuple[LoadedDocument, list[Finding]] | None:
    """``tools_folder/servers.yaml`` loaded, with its findings; None when there is none."""
    path = tools_folder / FILE_NAME
    if not path.is_file():
        return None
    doc = load_file(path)
    if doc.source is None:
        return doc, []
    return doc, header_findings(doc) + mcp_lock.entry_findings(doc.data, _taken(tools_folder), mcp_lock.read_lock(tools_folder))


def _taken(tools_folder: Path) -> set[str]:
    """Tool names an MCP tool may not take: the built-ins and the folder's Python tools."""
    from compiler.tools import BUILTIN_TOOLS, python_tool_names

    return set(BUILTIN_TOOLS).union(*(python_tool_names(py) for py in sorted(tools_folder.glob("*.py"))))
