"""A real MCP server for the MCP tool tests, written with the SDK's own server (MCPServer, formerly FastMCP).

``python mcp_server_script.py stdio`` serves over stdin/stdout; ``python mcp_server_script.py http
PORT`` serves streamable HTTP on 127.0.0.1:PORT at ``/mcp`` and answers 401 to any request without
``Authorization: Bearer $MCP_TEST_TOKEN`` (when that variable is set). ``MCP_TEST_VARIANT=changed``
serves a later version of the tools: ``add`` takes a third argument and ``shout`` is gone.
"""

from __future__ import annotations

import asyncio
import os
import sys

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("ergon-test")
CHANGED = os.environ.get("MCP_TEST_VARIANT") == "changed"

if CHANGED:
    @server.tool()
    def add(a: int, b: int, c: int) -> int:
        """Add three integers."""
        return a + b + c
else:
    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @server.tool()
    def shout(text: str) -> str:
        """Upper-case a text."""
        return text.upper()


@server.tool()
def lookup(customer: str) -> dict:
    """A customer's record."""
    return {"customer": customer, "tier": "gold", "open_deals": 2}


@server.tool()
def refuse(reason: str) -> str:
    """Always fails with the reason given."""
    raise ToolError(f"refused: {reason}")


@server.tool()
async def slow(seconds: float) -> str:
    """Answer after a while."""
    await asyncio.sleep(seconds)
    return "late"


@server.tool()
def who() -> str:
    """Which environment variable the server was given (its name, never its value)."""
    return "NOTES_TOKEN set" if os.environ.get("NOTES_TOKEN") == "s3cret-env" else "NOTES_TOKEN missing"


@server.tool()
def pid() -> int:
    """The server's process id (which process answers a session's calls)."""
    return os.getpid()


@server.tool()
def die() -> str:
    """End the server's process at once, as a crash would, without answering."""
    os._exit(3)


def _http(port: int) -> None:
    import uvicorn

    app = server.streamable_http_app()
    token = os.environ.get("MCP_TEST_TOKEN")

    async def guarded(scope, receive, send):
        if token and scope["type"] == "http":
            headers = dict(scope.get("headers") or [])
            if headers.get(b"authorization", b"").decode() != f"Bearer {token}":
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"text/plain")]})
                await send({"type": "http.response.body", "body": b"unauthorized"})
                return
        await app(scope, receive, send)

    uvicorn.run(guarded, host="127.0.0.1", port=port, log_level="warning", lifespan="on")


if __name__ == "__main__":
    if sys.argv[1] == "http":
        _http(int(sys.argv[2]))
    else:
        server.run("stdio")
