"""MCP tool calls through Ergon against the MCP SDK's own client holding one session.

The server is the tests' MCP server (``tests/tools/mcp_server_script.py``, the SDK's
``MCPServer``) over stdio, locked by ``ergon tools sync`` into a temporary definitions folder.
Each round, in turn:

* **SDK, one session** (the baseline): what a hand-written flow does — ``Client(stdio_client(…))``
  entered once, then the calls;
* **Ergon**: the same calls through :func:`flows.tools.invoke.invoke` as one run's calls (a tool
  node's: checked against the locked schema, no tool-call row written), which opens the run's
  session on its first call and closes it as the run's end does (:mod:`flows.tools.mcp_sessions`);
* **SDK, a session per call**: every call starts the server (what Ergon did before it kept
  sessions), fewer calls.

Each is timed for ``--calls`` calls one after another and the same number side by side
(``asyncio.gather``), the session's opening included (a fresh process each round). Medians over
``--rounds`` rounds; the ratio is Ergon's over the baseline's.

    .venv/bin/python benchmarks/mcp_calls.py [--calls 50] [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "tests" / "tools" / "mcp_server_script.py"


def _folder() -> Path:
    """A definitions folder with the stdio server locked (``ergon tools sync``)."""
    from flows.tools import mcp_servers

    definitions = Path(tempfile.mkdtemp(prefix="ergon-bench-mcp-"))
    tools = definitions / "tools"
    tools.mkdir()
    (tools / "servers.yaml").write_text(yaml.safe_dump({"servers": [
        {"type": "mcp", "id": "notes", "command": sys.executable, "args": [str(SCRIPT), "stdio"]}]}), encoding="utf-8")
    _, failures = asyncio.run(mcp_servers.sync(tools))
    if failures:
        raise SystemExit(f"the MCP server did not list its tools: {failures}")
    return tools


async def _sdk_session(calls: int, side_by_side: bool) -> None:
    from mcp import Client, StdioServerParameters, stdio_client

    params = StdioServerParameters(command=sys.executable, args=[str(SCRIPT), "stdio"])
    async with Client(stdio_client(params), cache=None) as client:
        if side_by_side:
            await asyncio.gather(*(client.call_tool("add", {"a": i, "b": 1}) for i in range(calls)))
        else:
            for i in range(calls):
                await client.call_tool("add", {"a": i, "b": 1})


async def _sdk_session_per_call(calls: int, side_by_side: bool) -> None:
    if side_by_side:
        await asyncio.gather(*(_sdk_session(1, False) for _ in range(calls)))
    else:
        for _ in range(calls):
            await _sdk_session(1, False)


def _ergon(run: int) -> Callable[[int, bool], Awaitable[None]]:
    async def calls_of_one_run(calls: int, side_by_side: bool) -> None:
        from flows.tools import mcp_sessions
        from flows.tools.context import CURRENT, ToolContext
        from flows.tools.invoke import invoke

        CURRENT.set(ToolContext(run_id=f"bench-{run}", record_calls=False))
        if side_by_side:
            await asyncio.gather(*(invoke("notes_add", {"a": i, "b": 1}) for i in range(calls)))
        else:
            for i in range(calls):
                await invoke("notes_add", {"a": i, "b": 1})
        await mcp_sessions.close_run(f"bench-{run}")  # as a run's end does; the SDK's side closes too
    return calls_of_one_run


def _timed(fn: Callable[[int, bool], Awaitable[Any]], calls: int, side_by_side: bool) -> float:
    """Seconds of one round on a fresh event loop (its sessions close with it)."""
    started = time.perf_counter()
    asyncio.run(fn(calls, side_by_side))
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()

    from flows.tools import mcp_servers

    mcp_servers.configure(_folder())
    per_call = max(1, args.calls // 10)
    print(f"{args.calls} calls of `add` to a stdio MCP server (a session per call: {per_call} calls), "
          f"median of {args.rounds} rounds, seconds (min–max)")
    for side_by_side in (False, True):
        times: dict[str, list[float]] = {"sdk": [], "ergon": [], "per call": []}
        for round_ in range(args.rounds):
            times["sdk"].append(_timed(_sdk_session, args.calls, side_by_side))
            times["ergon"].append(_timed(_ergon(round_), args.calls, side_by_side))
            times["per call"].append(_timed(_sdk_session_per_call, per_call, side_by_side) * args.calls / per_call)
        how = "side by side" if side_by_side else "one after another"
        base = statistics.median(times["sdk"])
        for name, label in (("sdk", "SDK, one session (baseline)"), ("ergon", "Ergon, one run"),
                            ("per call", f"SDK, a session per call (×{args.calls // per_call})")):
            values = times[name]
            print(f"  {how:17}  {label:34} {statistics.median(values):7.2f} ({min(values):.2f}–{max(values):.2f})"
                  f"  {statistics.median(values) / base:5.2f}×")


if __name__ == "__main__":
    main()
