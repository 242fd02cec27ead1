"""MCP tool servers: `ergon tools sync` and its lock, `ergon check` against the lock, calls at run time.

Two real MCP servers written with the SDK's own server (``mcp_server_script.py``): one over
streamable HTTP, started by the tests on a free localhost port and refusing requests without the
right bearer token; one over stdio, started as its ``command`` by a run's first call to it.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets as pysecrets
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from compiler import check_workspace, load_workspace
from flows import cli
from flows.tools import REGISTRY, mcp_servers, remote
from flows.tools.errors import ToolArgumentError, ToolError
from flows.tools.invoke import invoke

SCRIPT = Path(__file__).with_name("mcp_server_script.py")
TOKEN = f"tok-{pysecrets.token_hex(8)}"


@pytest.fixture(autouse=True)
def clean_registry():
    import flows.tools.builtins  # noqa: F401  (registered before the snapshot: a module is imported once)

    before = dict(REGISTRY)
    yield
    REGISTRY.clear()
    REGISTRY.update(before)
    remote.SERVERS.clear()
    mcp_servers.SERVERS.clear()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def http_url():
    """The streamable-HTTP server (a subprocess), answering only ``Bearer TOKEN``."""
    port = _free_port()
    proc = subprocess.Popen([sys.executable, str(SCRIPT), "http", str(port)],
                            env={**os.environ, "MCP_TEST_TOKEN": TOKEN}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            break
        except OSError as exc:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError(f"the MCP test server did not start: {proc.stderr.read().decode() if proc.stderr else ''}") from exc
            time.sleep(0.1)
    yield f"http://127.0.0.1:{port}/mcp"
    proc.terminate()
    proc.wait(10)


@pytest.fixture
def token_secret(store, monkeypatch):
    """The HTTP server's token as the Ergon secret CRM_TOKEN."""
    from flows import secrets
    from flows.secrets.keys import generate_key

    monkeypatch.setenv("ERGON_SECRET_KEYS", f"k1:{generate_key()}")
    secrets.set_secret("CRM_TOKEN", TOKEN)
    return "secret:CRM_TOKEN"


def write_servers(tools: Path, http_url: str | None = None, *, bearer: str = "secret:CRM_TOKEN",
                  variant: str = "first", extra: list[dict] | None = None, notes: dict | None = None) -> Path:
    tools.mkdir(parents=True, exist_ok=True)
    servers: list[dict] = [{"name": "legacy", "url": "http://127.0.0.1:9/api"}]  # an HTTP tool server, untouched
    if http_url:
        servers.append({"type": "mcp", "id": "crm", "description": "CRM over HTTP", "url": http_url,
                        "auth": {"bearer": bearer}, "timeout": 20})
    servers.append({"type": "mcp", "id": "notes", "command": sys.executable, "args": [str(SCRIPT), "stdio"],
                    "env": {"NOTES_TOKEN": "env:NOTES_TOKEN_VALUE", "MCP_TEST_VARIANT": variant}, "timeout": 30,
                    **(notes or {})})
    (tools / "servers.yaml").write_text(yaml.safe_dump({"servers": servers + (extra or [])}, sort_keys=False), encoding="utf-8")
    return tools


@pytest.fixture(autouse=True)
def _notes_env(monkeypatch):
    monkeypatch.setenv("NOTES_TOKEN_VALUE", "s3cret-env")


def sync(definitions: Path, *extra: str) -> int:
    return cli.run(["tools", "sync", "--definitions", str(definitions), *extra])


PROCESS = """
format_version: 1
process: mcp_flow
initial: look
context:
  schema:
    type: object
    properties:
      record: {type: object}
      total: {type: object}
  initial: {}
nodes:
  look:
    type: tool
    tool: crm_lookup
    input: {customer: acme}
    output: record
    writes: [record]
    transitions: [{to: add}]
  add:
    type: tool
    tool: notes_add
    input: {a: 2, b: 3}
    output: total
    writes: [total]
    transitions: [{to: done}]
  done: {type: final}
"""


def diagnostics(definitions: Path) -> list:
    return check_workspace(load_workspace([str(definitions)])).diagnostics


# --- sync and the lock ------------------------------------------------------------------------


def test_sync_writes_the_lock_of_both_servers(tmp_path, http_url, token_secret, capsys):
    tools = write_servers(tmp_path / "defs" / "tools", http_url)
    assert sync(tmp_path / "defs") == 0
    lock = json.loads((tools / "servers.lock.json").read_text())
    by_server = {ident: {t["name"]: t for t in entry["tools"]} for ident, entry in lock["servers"].items()}
    assert sorted(by_server) == ["crm", "notes"]  # the HTTP tool server `legacy` is not an MCP server
    assert sorted(by_server["notes"]) == ["add", "die", "lookup", "pid", "refuse", "shout", "slow", "who"]
    add = by_server["crm"]["add"]
    assert add["description"] == "Add two integers."
    assert add["input_schema"]["required"] == ["a", "b"] and add["input_schema"]["properties"]["a"]["type"] == "integer"
    assert add["output_schema"]["properties"]["result"]["type"] == "integer"
    assert TOKEN not in (tools / "servers.lock.json").read_text()
    assert "wrote" in capsys.readouterr().out
    listed = {row["name"]: row["server"] for row in json.loads(_list_json(tmp_path / "defs", capsys))}
    assert listed["crm_lookup"] == "crm" and listed["notes_lookup"] == "notes" and len(listed) == 16


def _list_json(definitions: Path, capsys) -> str:
    capsys.readouterr()
    assert cli.run(["tools", "list", "--definitions", str(definitions), "--json"]) == 0
    return capsys.readouterr().out


def test_sync_with_a_wrong_token_names_the_server_and_writes_nothing(tmp_path, http_url, capsys):
    tools = write_servers(tmp_path / "defs" / "tools", http_url, bearer="wrong-token")
    assert sync(tmp_path / "defs") == 1
    err = capsys.readouterr().err
    assert "MCP server `crm`" in err and "401" in err and "was not written" in err
    assert "wrong-token" not in err
    assert not (tools / "servers.lock.json").exists()
    # the other server alone can be synced
    assert sync(tmp_path / "defs", "--server", "notes") == 0
    assert list(json.loads((tools / "servers.lock.json").read_text())["servers"]) == ["notes"]


# --- ergon check ------------------------------------------------------------------------------


def test_check_passes_with_the_lock_and_refuses_without_it(tmp_path, http_url, token_secret):
    defs = tmp_path / "defs"
    write_servers(defs / "tools", http_url)
    (defs / "mcp_flow.yaml").write_text(PROCESS)
    before = diagnostics(defs)
    unknown = [d for d in before if d.code == "unknown-tool" and d.severity == "error"]
    assert {d.path for d in unknown} == {"nodes.look.tool", "nodes.add.tool"}
    assert all("ergon tools sync" in d.hint for d in unknown)
    warned = [d for d in before if d.severity == "warning" and d.file.endswith("servers.yaml")]
    assert len(warned) == 2 and all("servers.lock.json" in d.message for d in warned)

    assert sync(defs) == 0
    assert [d.format() for d in diagnostics(defs) if d.severity == "error"] == []


def test_check_holds_calls_to_the_locked_schemas(tmp_path):
    defs = tmp_path / "defs"
    write_servers(defs / "tools")
    assert sync(defs) == 0
    bad = PROCESS.replace("tool: crm_lookup\n    input: {customer: acme}", "tool: notes_lookup\n    input: {client: acme}") \
                 .replace("input: {a: 2, b: 3}", "input: {a: two, b: 3}")
    (defs / "mcp_flow.yaml").write_text(bad.replace("tool: notes_add", "tool: notes_add"))
    found = {(d.code, d.path): d for d in diagnostics(defs) if d.severity == "error"}
    assert "`customer`" in found[("tool-params", "nodes.look.input")].message  # required, not given
    assert "`a` of tool `notes_add`" in found[("tool-params", "nodes.add.input.a")].message
    (defs / "mcp_flow.yaml").write_text(PROCESS.replace("crm_lookup", "notes_lookup").replace("notes_add", "notes_multiply"))
    (missing,) = [d for d in diagnostics(defs) if d.severity == "error"]
    assert missing.code == "unknown-tool" and missing.path == "nodes.add.tool"
    assert "`notes` is MCP server `notes`'s namespace" in missing.hint and "`notes_add`" in missing.hint
    assert "run `ergon tools sync`" in missing.hint


def test_workflow_steps_and_agents_name_mcp_tools(tmp_path):
    defs = tmp_path / "defs"
    write_servers(defs / "tools")
    assert sync(defs) == 0
    (defs / "wf.yaml").write_text("""
kind: workflow
name: wf
input_schema: {type: object, properties: {who: {type: string}}, required: [who]}
steps:
  - type: activity
    name: notes_lookup
    params: {customer: "${who}"}
    output: found
  - type: activity
    name: notes_add
    params: {a: 1, c: 2}
    output: sum
""")
    (defs / "agent.yaml").write_text("""
format_version: 1
process: agent_flow
initial: work
context:
  schema: {type: object, properties: {n: {type: integer}}}
  initial: {}
nodes:
  work:
    type: agent
    prompt: "Add 20 and 22."
    tools: [think, notes_add, +notes_lookup, notes_nope]
    writes: [n]
    transitions: [{to: done}]
  done: {type: final}
""")
    found = [d for d in diagnostics(defs) if d.severity == "error"]
    assert [(d.file.rsplit("/", 1)[-1], d.code, d.path) for d in found] == [
        ("agent.yaml", "unknown-tool", "nodes.work.tools[3]"),
        ("wf.yaml", "tool-params", "steps[1].params"),  # `c` passes: the schema allows other names
    ]
    assert "needs the parameter `b`" in found[1].message


def test_check_reports_bad_mcp_entries_at_their_place(tmp_path):
    tools = tmp_path / "defs" / "tools"
    tools.mkdir(parents=True)
    (tools / "servers.yaml").write_text("""servers:
  - type: mcp
    id: both
    url: https://mcp.example.com/mcp
    command: run-it
  - type: mcp
    id: neither
  - type: mcp
    id: crm
    url: https://mcp.example.com/mcp
    headers: {X-Key: "prefect-secret:Not_A_Block"}
    auth: oauth
    colour: blue
  - type: mcp
    id: local
    command: serve
    env: {TOKEN: "secret:"}
    headers: {A: b}
  - name: plain-http
    url: https://tools.example.com/api
""")
    got = {(d.code, d.path): d for d in diagnostics(tmp_path / "defs")}
    where = {key: (d.line, d.col) for key, d in got.items()}
    assert where[("bad-value", "servers[0].command")] == (5, 5)
    assert ("missing-field", "servers[1]") in got and "`url`" in got[("missing-field", "servers[1]")].message
    assert where[("bad-value", "servers[2].headers.X-Key")][0] == 11
    assert "OAuth" in got[("bad-value", "servers[2].auth")].message
    assert got[("unknown-key", "servers[2].colour")].line == 13
    assert got[("bad-value", "servers[3].env.TOKEN")].line == 17
    assert "reached by `url`" in got[("bad-value", "servers[3].headers")].message
    assert not any(d.path.startswith("servers[4]") for d in got.values())  # an HTTP tool server: unchanged
    assert all(d.file.endswith("servers.yaml") for d in got.values())


# --- run time ---------------------------------------------------------------------------------


def test_calls_over_stdio_and_http_with_a_secret_header(tmp_path, http_url, token_secret, run_ctx):
    from flows.store import visits as visit_store
    from flows.tools import load_tool_folder

    tools = write_servers(tmp_path / "defs" / "tools", http_url)
    assert sync(tmp_path / "defs") == 0
    load_tool_folder(tools)
    assert REGISTRY["crm_lookup"].source == "mcp:crm"
    assert REGISTRY["notes_add"].parameters["required"] == ["a", "b"]
    assert asyncio.run(invoke("crm_lookup", {"customer": "acme"})) == {"customer": "acme", "tier": "gold", "open_deals": 2}
    assert asyncio.run(invoke("notes_add", {"a": 2, "b": 40})) == {"result": 42}
    assert asyncio.run(invoke("notes_who", {})) == {"result": "NOTES_TOKEN set"}  # the env reference reached it
    with pytest.raises(ToolArgumentError):  # checked against the locked schema before any connection
        asyncio.run(invoke("notes_add", {"a": "x", "b": 1}))
    rows = visit_store.tool_calls_for_run(run_ctx.run_id)
    assert [(r.tool, r.status) for r in rows] == [("crm_lookup", "ok"), ("notes_add", "ok"), ("notes_who", "ok"),
                                                   ("notes_add", "error")]
    stored = json.dumps([[r.args, r.result, r.error] for r in rows])
    assert TOKEN not in stored and "s3cret-env" not in stored


def test_server_errors_are_tool_errors(tmp_path, run_ctx):
    from flows.store import visits as visit_store

    tools = write_servers(tmp_path / "defs" / "tools")
    assert sync(tmp_path / "defs") == 0
    mcp_servers.configure(tools)
    with pytest.raises(ToolError, match=r"tool `notes_refuse`: MCP server `notes` .* answered with an error: .*refused: no stock"):
        asyncio.run(invoke("notes_refuse", {"reason": "no stock"}))
    (row,) = visit_store.tool_calls_for_run(run_ctx.run_id)
    assert row.status == "error" and "refused: no stock" in row.error


def test_a_slow_server_times_out(tmp_path):
    tools = write_servers(tmp_path / "defs" / "tools")
    assert sync(tmp_path / "defs") == 0
    write_servers(tools, notes={"timeout": 3})  # the same tools, a shorter timeout
    mcp_servers.configure(tools)
    with pytest.raises(ToolError, match=r"did not answer within 3 s") as info:
        asyncio.run(invoke("notes_slow", {"seconds": 30}))
    assert isinstance(info.value, TimeoutError)  # `retry_on: [TimeoutError]` selects it


def test_a_server_that_is_down_is_a_tool_error(tmp_path, http_url, token_secret):
    tools = write_servers(tmp_path / "defs" / "tools", http_url)
    assert sync(tmp_path / "defs") == 0
    write_servers(tools, f"http://127.0.0.1:{_free_port()}/mcp")  # nothing listens there
    mcp_servers.configure(tools)
    with pytest.raises(ToolError, match=r"tool `crm_lookup`: MCP server `crm` \(http://127.0.0.1:\d+/mcp\) could not be reached"):
        asyncio.run(invoke("crm_lookup", {"customer": "acme"}))


def test_a_stale_lock_is_refused_at_run_time_naming_the_command(tmp_path):
    tools = write_servers(tmp_path / "defs" / "tools")
    assert sync(tmp_path / "defs") == 0
    write_servers(tools, variant="changed")  # the server now has add(a, b, c) and no shout
    mcp_servers.configure(tools)
    with pytest.raises(ToolError, match=r"no longer offers `shout`.*run `ergon tools sync`"):
        asyncio.run(invoke("notes_shout", {"text": "hi"}))
    with pytest.raises(ToolError, match=r"input schema of `add` .* differs from the one in servers.lock.json: run `ergon tools sync`"):
        asyncio.run(invoke("notes_add", {"a": 1, "b": 2}))
    assert asyncio.run(invoke("notes_lookup", {"customer": "x"}))["tier"] == "gold"  # unchanged tools still run

    assert sync(tmp_path / "defs") == 0
    (tmp_path / "defs" / "mcp_flow.yaml").write_text(PROCESS.replace("crm_lookup", "notes_shout").replace(
        "{customer: acme}", "{text: hi}"))
    (gone,) = [d for d in diagnostics(tmp_path / "defs") if d.severity == "error" and d.code == "unknown-tool"]
    assert gone.path == "nodes.look.tool"


@pytest.mark.prefect
def test_a_process_runs_mcp_tool_nodes_into_its_context(tmp_path, http_url, token_secret, run_def, definitions):
    from flows.store import visits as visit_store

    write_servers(definitions / "tools", http_url)
    assert sync(definitions) == 0
    result = run_def({"mcp_flow.yaml": PROCESS}, "mcp_flow")
    assert result["status"] == "completed", result
    assert result["context"] == {"record": {"customer": "acme", "tier": "gold", "open_deals": 2}, "total": {"result": 5}}
    visits = visit_store.visits_for_run(result["run_id"])
    assert [(v.node_id, v.status) for v in visits][:2] == [("look", "completed"), ("add", "completed")]
    assert TOKEN not in json.dumps([v.model_dump() for v in visits], default=str)


PIDS = """
format_version: 1
process: mcp_pids
initial: first
context:
  schema:
    type: object
    properties:
      first: {type: object}
      second: {type: object}
  initial: {}
nodes:
  first: {type: tool, tool: notes_pid, output: first, writes: [first], transitions: [{to: second}]}
  second: {type: tool, tool: notes_pid, output: second, writes: [second], transitions: [{to: done}]}
  done: {type: final}
"""


@pytest.mark.prefect
def test_a_runs_nodes_call_one_server_process_which_ends_with_the_run(tmp_path, run_def, definitions):
    from flows.tools import mcp_sessions

    write_servers(definitions / "tools")
    assert sync(definitions) == 0
    result = run_def({"mcp_pids.yaml": PIDS}, "mcp_pids")
    assert result["status"] == "completed", result
    pid = result["context"]["first"]["result"]
    assert result["context"]["second"]["result"] == pid
    deadline = time.monotonic() + 15
    while not _process_ended(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _process_ended(pid)
    assert not [s for s in mcp_sessions.open_sessions() if s.key[1] == result["run_id"]]


def test_an_agent_calls_an_mcp_tool(tmp_path, store, monkeypatch):
    sys.path.insert(0, str(Path(__file__).parents[1] / "llm"))
    from fake_openai import FakeOpenAI

    from compiler.ir import EnvironmentDef
    from flows.llm.agent import AgentTask, run_agent
    from flows.tools import invoke as toolbox

    tools = write_servers(tmp_path / "defs" / "tools")
    assert sync(tmp_path / "defs") == 0
    mcp_servers.configure(tools)
    monkeypatch.setenv("FAKE_OPENAI_KEY", "sk-fake")
    fake = FakeOpenAI().start()
    try:
        fake.script("loop", {"tool_calls": [{"name": "notes_add", "arguments": {"a": 20, "b": 22}}]}, {"json": {"n": 42}})
        env = EnvironmentDef.model_validate({"kind": "environment", "name": "fake", "models": [
            {"model": "openai/loop", "name": "loop", "api_base": fake.url, "api_key": "env:FAKE_OPENAI_KEY"}]})
        schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
        task = AgentTask(node_id="worker", prompt="Add 20 and 22.", process_name="p", process_description=None,
                         writes=["n"], result_schema=schema, context={}, tools=["notes_add"], model="fake")
        result = asyncio.run(run_agent(task, toolbox=toolbox, environments={"fake": env}))
        first, second = fake.for_model("loop")
    finally:
        fake.stop()
    assert result.output == {"n": 42} and result.tool_calls == 1
    offered = {t["function"]["name"]: t["function"] for t in first.body["tools"]}
    assert offered["notes_add"]["parameters"]["required"] == ["a", "b"]
    (reply,) = [m for m in second.body["messages"] if m["role"] == "tool"]
    assert json.loads(reply["content"]) == {"result": 42}


# --- sessions: one per run and server -------------------------------------------------------------


def _process_ended(pid: int) -> bool:
    """The process is gone or a zombie (ended, not yet reaped)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return True
    return state in ("Z", "X")


async def _ended_within(pid: int, seconds: float = 15) -> bool:
    deadline = time.monotonic() + seconds
    while not _process_ended(pid):
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.1)
    return True


async def _sessions_within(runs: list[str | None], seconds: float = 15) -> list[str | None]:
    """The runs of the open sessions once they are ``runs`` (a closing session is listed until
    its connection is closed, a moment after its server's process ended), or after ``seconds``."""
    from flows.tools import mcp_sessions

    deadline = time.monotonic() + seconds
    while (now := sorted((s.key[1] for s in mcp_sessions.open_sessions()), key=str)) != runs:
        if time.monotonic() > deadline:
            break
        await asyncio.sleep(0.1)
    return now


def _in_run(run_id: str | None, call):
    """``call()``'s awaitable, run as a call of the run ``run_id``."""
    from flows.tools.context import CURRENT, ToolContext

    async def inside():
        CURRENT.set(ToolContext(run_id=run_id, record_calls=False))
        return await call()
    return inside()


@pytest.fixture
def notes(tmp_path):
    tools = write_servers(tmp_path / "defs" / "tools")
    assert sync(tmp_path / "defs") == 0
    mcp_servers.configure(tools)


async def _pid() -> int:
    return (await invoke("notes_pid", {}))["result"]


def test_a_runs_calls_share_one_server_process_until_it_ends(notes):
    from flows.tools import mcp_sessions

    async def main():
        first = await _in_run("run-a", _pid)
        again = [await _in_run("run-a", _pid) for _ in range(3)]
        side_by_side = await asyncio.gather(*(_in_run("run-a", _pid) for _ in range(5)))
        other = await _in_run("run-b", _pid)  # another run: a process of its own
        assert {first, *again, *side_by_side} == {first} and other != first
        await mcp_sessions.close_run("run-a")  # what the run's body does as it ends
        assert _process_ended(first), "closed and waited for"
        assert not _process_ended(other)
        assert await _sessions_within(["run-b"]) == ["run-b"]
        assert await _in_run("run-b", _pid) == other
        await mcp_sessions.close_run("run-b")

    asyncio.run(main())


def test_a_call_that_breaks_the_session_leaves_the_next_call_a_new_one(notes):
    from flows.tools import mcp_sessions

    async def main():
        first = await _in_run("run-a", _pid)
        with pytest.raises(ToolError, match=r"MCP server `notes` .* closed the connection before it answered"):
            await _in_run("run-a", lambda: invoke("notes_die", {}))
        assert await _ended_within(first)
        second = await _in_run("run-a", _pid)
        assert second != first and not _process_ended(second)
        await mcp_sessions.close_run("run-a")

    asyncio.run(main())


def test_a_timed_out_call_does_not_stop_the_calls_beside_it(tmp_path):
    from flows.tools import mcp_sessions

    tools = write_servers(tmp_path / "defs" / "tools")
    assert sync(tmp_path / "defs") == 0
    write_servers(tools, notes={"timeout": 5})  # 4 s to spare for the call beside it, on a busy machine
    mcp_servers.configure(tools)

    async def main():
        first = await _in_run("run-a", _pid)
        slow, beside = await asyncio.gather(_in_run("run-a", lambda: invoke("notes_slow", {"seconds": 30})),
                                            _in_run("run-a", lambda: invoke("notes_slow", {"seconds": 1})),
                                            return_exceptions=True)
        assert isinstance(slow, TimeoutError) and beside == {"result": "late"}
        assert await _ended_within(first)  # dropped once the call beside it ended
        assert await _in_run("run-a", _pid) != first
        await mcp_sessions.close_run("run-a")

    asyncio.run(main())


def test_a_call_outside_any_run_has_a_session_of_its_own(notes):
    from flows.tools import mcp_sessions

    async def main():
        first = await _in_run(None, _pid)
        assert _process_ended(first), "closed as the call ended"
        second = await _in_run(None, _pid)
        assert second != first and _process_ended(second)
        assert mcp_sessions.open_sessions() == []

    asyncio.run(main())


def test_a_session_unused_for_a_while_closes(notes, monkeypatch):
    from flows.tools import mcp_sessions

    monkeypatch.setattr(mcp_sessions, "IDLE_SECONDS", 0.5)

    async def main():
        first = await _in_run("run-a", _pid)
        assert await _in_run("run-a", _pid) == first
        assert await _ended_within(first)
        assert await _sessions_within([]) == []

    asyncio.run(main())
