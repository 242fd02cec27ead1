"""invoke(): lookup, argument validation, recording, secret masking, error wrapping."""

from __future__ import annotations

import asyncio
import pickle
from datetime import date

import pytest

from flows.tools import REGISTRY, tool
from flows.tools.errors import ToolArgumentError, ToolError, ToolFailed, UnknownTool
from flows.tools.invoke import invoke, mask_secrets, tool_definitions


class FlakyError(Exception):
    pass


@tool(name="t_add")
def add(a: int, b: int = 2) -> dict:
    """Add two numbers.

    Args:
        a: the first number
        b: the second number
    """
    return {"sum": a + b, "on": date(2026, 1, 2)}


@tool(name="t_login")
async def login(user: str, password: str, options: dict | None = None) -> dict:
    """Pretend to log in."""
    return {"user": user, "token": "tok-123"}


@tool(name="t_boom")
def boom(kind: str = "timeout") -> None:
    """Fail the way asked."""
    if kind == "timeout":
        raise TimeoutError("upstream too slow")
    if kind == "key":
        raise KeyError("missing")
    raise FlakyError("flaky")


@tool(name="t_refuse")
def refuse() -> None:
    """Refuse with a ToolError of its own."""
    raise ToolError("t_refuse", "not today")


def call(name, args=None):
    return asyncio.run(invoke(name, args))


def test_schema_comes_from_hints_and_docstring():
    params = REGISTRY["t_add"].parameters
    assert params["required"] == ["a"]
    assert params["properties"]["a"] == {"type": "integer", "description": "the first number"}
    assert params["properties"]["b"]["default"] == 2
    assert params["additionalProperties"] is False


def test_sync_tool_runs_with_coerced_args_and_json_result():
    assert call("t_add", {"a": "40"}) == {"sum": 42, "on": "2026-01-02"}


def test_unknown_tool_names_the_known_ones():
    with pytest.raises(UnknownTool, match="t_nope.*is not registered.*t_add"):
        call("t_nope", {})


@pytest.mark.parametrize("args, field, text", [
    ({}, "a", "`a`: Field required"),
    ({"a": "x"}, "a", "`a`: Input should be a valid integer"),
    ({"a": 1, "c": 3}, "c", "`c`: Extra inputs are not permitted"),
])
def test_validation_errors_name_tool_and_field(args, field, text):
    with pytest.raises(ToolArgumentError) as info:
        call("t_add", args)
    assert info.value.tool == "t_add" and info.value.field == field
    assert "tool `t_add`" in str(info.value) and text in str(info.value)


def test_validation_error_never_quotes_a_secret_value():
    with pytest.raises(ToolArgumentError) as info:
        call("t_login", {"user": "ann", "password": ["hunter2"]})
    assert info.value.field == "password" and "hunter2" not in str(info.value)


def test_own_exception_is_wrapped_but_keeps_its_type():
    with pytest.raises(ToolFailed) as info:
        call("t_boom", {"kind": "timeout"})
    err = info.value
    assert isinstance(err, ToolError) and isinstance(err, TimeoutError)
    assert type(err).__name__ == "TimeoutError"  # what retry_on names match against
    assert isinstance(err.original, TimeoutError) and err.__cause__ is err.original
    assert str(err) == "tool `t_boom`: TimeoutError: upstream too slow"
    again = pickle.loads(pickle.dumps(err))
    assert isinstance(again, TimeoutError) and isinstance(again, ToolFailed)


def test_own_exception_of_a_user_class_and_keyerror():
    with pytest.raises(FlakyError) as info:
        call("t_boom", {"kind": "flaky"})
    assert isinstance(info.value, ToolFailed) and "FlakyError" in {c.__name__ for c in type(info.value).__mro__}
    with pytest.raises(KeyError) as info:
        call("t_boom", {"kind": "key"})
    assert str(info.value) == "tool `t_boom`: KeyError: 'missing'"


def test_a_tools_own_tool_error_passes_unchanged():
    with pytest.raises(ToolError) as info:
        call("t_refuse")
    assert type(info.value) is ToolError and info.value.message == "not today"


def test_mask_secrets_recursively():
    masked = mask_secrets({"API_KEY": "k", "headers": {"Authorization": "Bearer x", "Accept": "json"},
                           "items": [{"client_secret": "s", "max_tokens": 5, "access_token": "t"}]})
    assert masked == {"API_KEY": "***", "headers": {"Authorization": "***", "Accept": "json"},
                      "items": [{"client_secret": "***", "max_tokens": 5, "access_token": "***"}]}


def test_calls_are_recorded_with_masked_secrets(run_ctx):
    from flows.store import visits as visit_store

    assert call("t_login", {"user": "ann", "password": "hunter2", "options": {"api_key": "k1"}})["token"] == "tok-123"
    with pytest.raises(ToolFailed):
        call("t_boom", {"kind": "flaky"})
    with pytest.raises(ToolArgumentError):
        call("t_add", {"a": "x"})
    rows = visit_store.tool_calls_for_run(run_ctx.run_id)
    assert [(r.tool, r.status) for r in rows] == [("t_login", "ok"), ("t_boom", "error"), ("t_add", "error")]
    ok, failed, invalid = rows
    assert ok.visit_id == run_ctx.visit_id and ok.latency_ms is not None and ok.error is None
    assert ok.args == {"user": "ann", "password": "***", "options": {"api_key": "***"}}
    assert ok.result == {"user": "ann", "token": "***"}  # recorded copy masked; the caller got the value
    assert failed.error == "tool `t_boom`: FlakyError: flaky" and failed.result is None
    assert "`a`" in invalid.error
    assert "hunter2" not in repr([r.model_dump() for r in rows]) and "k1" not in repr([r.model_dump() for r in rows])


def test_nothing_is_recorded_without_a_run(store):
    from flows.store import runs as run_store
    from flows.store import visits as visit_store

    call("t_add", {"a": 1})
    run = run_store.create_run("x")
    assert visit_store.tool_calls_for_run(run.id) == []


def test_tool_definitions_for_a_model():
    (definition,) = asyncio.run(tool_definitions(["t_add"]))
    assert definition["type"] == "function" and definition["function"]["name"] == "t_add"
    assert definition["function"]["description"] == "Add two numbers."
    assert definition["function"]["parameters"]["required"] == ["a"]
