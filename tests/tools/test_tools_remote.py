"""HTTP tool servers: discovery (GET), calls (POST tool_use), errors, headers from env/secrets."""

from __future__ import annotations

import asyncio
import json

import pytest

from flows.tools import REGISTRY, load_tool_folder
from flows.tools import remote
from flows.tools.errors import ToolArgumentError, ToolError, UnknownTool
from flows.tools.invoke import invoke


@pytest.fixture(autouse=True)
def clean_registry():
    before = dict(REGISTRY)
    remote.SERVERS.clear()
    yield
    REGISTRY.clear()
    REGISTRY.update(before)
    remote.SERVERS.clear()


@pytest.fixture
def tool_server(local_server):
    """A tool server per the custom-tools contract; returns (url, log of requests)."""
    seen: list[dict] = []
    listing = {
        "src": "", "title": "Test tools", "description": "for tests",
        "tools": [
            {"name": "weather", "description": "Weather for a place.",
             "input_schema": {"type": "object", "properties": {"location": {"type": "string"}},
                              "required": ["location"], "additionalProperties": False}},
            {"name": "shout", "description": "Upper-case a text.",
             "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}}},
            {"name": "broken", "description": "Always fails.", "input_schema": {"type": "object"}},
            {"name": "bad_schema", "description": "x", "input_schema": {"type": 12}},
            {"name": "noop", "description": "clashes with a built-in"},
        ],
    }

    def handle(h):
        if h.command == "GET":
            seen.append({"method": "GET", "auth": h.headers.get("Authorization")})
            return h.send(200, json.dumps(listing).encode())
        req = json.loads(h.body())
        seen.append({"method": "POST", "auth": h.headers.get("Authorization"), "body": req})
        use = req["tool_use"]
        if use["tool_name"] == "weather":
            content = json.dumps({"location": use["tool_input"]["location"], "forecast": "sunny"})
            return h.send(200, json.dumps({"tool_use_id": use["id"], "content": content}).encode())
        if use["tool_name"] == "shout":
            return h.send(200, json.dumps({"tool_use_id": use["id"], "content": use["tool_input"]["text"].upper()}).encode())
        h.send(500, json.dumps({"tool_use_id": use["id"], "status": 500, "error": "database down"}).encode())

    port = local_server(handle)
    return f"http://127.0.0.1:{port}/api/tools", seen


def write_servers(folder, url, headers=None):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "servers.yaml").write_text(
        json.dumps({"servers": [{"name": "test", "url": url, "headers": headers or {}}]}), encoding="utf-8")
    return folder


def test_register_servers_lists_and_calls_tools(tool_server, tmp_path, monkeypatch, store):
    import flows.tools.builtins  # noqa: F401  (noop must exist to show the clash rule)
    from flows import secrets
    from flows.secrets.keys import generate_key

    url, seen = tool_server
    monkeypatch.setenv("ERGON_SECRET_KEYS", f"k1:{generate_key()}")
    secrets.set_secret("TOOLS_TOKEN", "Bearer s3cret")  # the encrypted store, not an env variable
    folder = write_servers(tmp_path / "tools", url, {"Authorization": "secret:TOOLS_TOKEN"})
    names = remote.register_servers(folder)
    assert names == ["weather", "shout", "broken"]  # bad schema and the built-in clash are skipped
    spec = REGISTRY["weather"]
    assert spec.source == "remote:test" and spec.parameters["required"] == ["location"]
    assert REGISTRY["noop"].source == "python"

    assert asyncio.run(invoke("weather", {"location": "Paris"})) == {"location": "Paris", "forecast": "sunny"}
    assert asyncio.run(invoke("shout", {"text": "hi"})) == "HI"
    post = seen[-1]
    assert post["auth"] == "Bearer s3cret"
    assert post["body"]["tool_use"]["tool_name"] == "shout" and post["body"]["tool_use"]["tool_input"] == {"text": "hi"}
    assert post["body"]["tool_use"]["id"].startswith("toolu_")


def test_arguments_are_checked_against_the_input_schema(tool_server, tmp_path):
    url, seen = tool_server
    remote.register_servers(write_servers(tmp_path / "tools", url))
    with pytest.raises(ToolArgumentError) as info:
        asyncio.run(invoke("weather", {"place": "Paris"}))
    assert info.value.field == "location"
    assert "`location`: is required" in str(info.value) and "`place`: is not an argument" in str(info.value)
    assert [s["method"] for s in seen] == ["GET"]  # nothing was posted


def test_server_error_is_a_tool_error(tool_server, tmp_path):
    url, _ = tool_server
    remote.register_servers(write_servers(tmp_path / "tools", url))
    with pytest.raises(ToolError, match="tool `broken`: the tool server answered 500: database down"):
        asyncio.run(invoke("broken", {}))


def test_discovery_is_lazy_through_load_tool_folder(tool_server, tmp_path, run_ctx):
    from flows.store import visits as visit_store

    url, seen = tool_server
    load_tool_folder(write_servers(tmp_path / "tools", url))
    assert seen == [] and "weather" not in REGISTRY  # reading the folder asks no server
    assert asyncio.run(invoke("weather", {"location": "Oslo"}))["location"] == "Oslo"
    post = seen[-1]["body"]
    assert post["metadata"] == {"run_id": run_ctx.run_id, "visit_id": run_ctx.visit_id, "node_id": "agent"}
    (row,) = visit_store.tool_calls_for_run(run_ctx.run_id)
    assert (row.tool, row.status, row.args) == ("weather", "ok", {"location": "Oslo"})


def test_unreachable_server_fails_only_its_tools(tmp_path, local_server):
    port = local_server(lambda h: h.send(503, b"{}"))
    load_tool_folder(write_servers(tmp_path / "tools", f"http://127.0.0.1:{port}/"))
    with pytest.raises(UnknownTool, match="weather"):
        asyncio.run(invoke("weather", {"location": "x"}))
    assert remote.SERVERS["test"].discovered is False  # asked again next time


def test_missing_secret_is_named_not_leaked(tool_server, tmp_path, store):
    url, _ = tool_server
    with pytest.raises(remote.ToolServerError, match=r"secret `NOPE` is not set; store it with `ergon secrets set NOPE`"):
        remote.register_servers(write_servers(tmp_path / "tools", url, {"Authorization": "secret:NOPE"}))


def test_env_header_values(monkeypatch):
    monkeypatch.setenv("MY_TOKEN", "abc")
    assert remote.resolve_header("env:MY_TOKEN") == "abc"
    assert remote.resolve_header("plain") == "plain"
