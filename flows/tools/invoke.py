"""Calling a tool: the one path tool nodes and agents take.

:func:`invoke` looks the tool up (asking configured HTTP tool servers when the name is not yet
known), checks the arguments against the tool's schema, runs it (sync tools in a worker thread,
which carries the :mod:`~flows.tools.context` variable along), JSON-normalises the result and,
when a run is set in the tool context, records the call in the store: masked arguments, result,
status ``ok``/``error``, latency, error message.

Errors are :class:`~flows.tools.errors.ToolError`\\ s; an exception from the tool's own code comes
out as a :class:`~flows.tools.errors.ToolFailed` that is still an instance of the original class
(see :mod:`flows.tools.errors`), so retry policies keyed on exception types keep working.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import re
import time
from typing import Any

import jsonschema
from pydantic import ValidationError
from pydantic_core import to_jsonable_python

from flows.secrets.redaction import redact
from flows.stand_ins import STAND_INS
from flows.tools import REGISTRY, ToolSpec
from flows.tools.context import current
from flows.tools.errors import ToolArgumentError, ToolError, ToolFailed, UnknownTool, wrap_failure

__all__ = ["invoke", "lookup", "tool_definitions", "mask_secrets", "ToolError", "ToolFailed", "ToolArgumentError", "UnknownTool"]

log = logging.getLogger("ergon.tools")

#: Argument keys whose values are never recorded (matched case-insensitively anywhere in the
#: key: `api_key`, `X-Api-Key`, `client_secret`, `Authorization`, `access_token`). `token` only
#: at the start or end, so that `max_tokens` stays readable.
SECRET_KEY = re.compile(
    r"api[-_]?key|access[-_]?key|private[-_]?key|secret|passw(?:or)?d|authorization|cookie|credential"
    r"|^token|token$",
    re.IGNORECASE,
)
MASK = "***"


def mask_secrets(value: Any) -> Any:
    """``value`` with every dict entry whose key looks like a secret replaced by ``***`` (recursively)."""
    if isinstance(value, dict):
        return {k: (MASK if isinstance(k, str) and SECRET_KEY.search(k) else mask_secrets(v)) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [mask_secrets(v) for v in value]
    return value


def to_json(value: Any) -> Any:
    """A JSON-compatible copy of a tool result (models, dataclasses, dates, sets, bytes…)."""
    return to_jsonable_python(value, fallback=str)


async def lookup(name: str) -> ToolSpec:
    """The registered tool ``name``; asks configured tool servers once before giving up."""
    spec = REGISTRY.get(name)
    if spec is None:
        from flows.tools import remote

        if await remote.discover_pending():
            spec = REGISTRY.get(name)
    if spec is None:
        known = ", ".join(sorted(REGISTRY)) or "none"
        raise UnknownTool(name, f"is not registered (known: {known})")
    return spec


async def tool_definitions(names: list[str]) -> list[dict[str, Any]]:
    """OpenAI-style function definitions of ``names`` (what a model is offered); UnknownTool if one is missing."""
    specs = [await lookup(n) for n in names]
    return [{"type": "function", "function": {"name": s.name, "description": s.description, "parameters": s.parameters}}
            for s in specs]


def _field(loc: tuple | list) -> str:
    return ".".join(str(p) for p in loc) or "(arguments)"


def _validate(spec: ToolSpec, args: dict[str, Any]) -> dict[str, Any]:
    """Checked (and, for Python tools, coerced) arguments, or a ToolArgumentError naming the field.

    Messages never quote the offending value: it may be a secret.
    """
    if not isinstance(args, dict):
        raise ToolArgumentError(spec.name, f"arguments must be an object, not {type(args).__name__}")
    if spec.validate is not None:
        try:
            return spec.validate(args)
        except ValidationError as exc:
            errors = exc.errors(include_url=False, include_input=False)
            first = _field(errors[0]["loc"]) if errors else None
            detail = "; ".join(f"`{_field(e['loc'])}`: {e['msg']}" for e in errors)
            raise ToolArgumentError(spec.name, f"invalid arguments: {detail}", first) from None
    problems: list[tuple[str, str]] = []
    validator = jsonschema.Draft202012Validator(spec.parameters or {"type": "object"})
    for e in sorted(validator.iter_errors(args), key=lambda e: [str(p) for p in e.absolute_path]):
        problems.extend(_describe(e))
    if problems:
        detail = "; ".join(f"`{where}`: {what}" for where, what in problems)
        raise ToolArgumentError(spec.name, f"invalid arguments: {detail}", problems[0][0])
    return args


def _describe(e: jsonschema.ValidationError) -> list[tuple[str, str]]:
    """(field, problem) pairs for one JSON Schema error, without quoting the value."""
    base = [str(p) for p in e.absolute_path]
    if e.validator == "required" and isinstance(e.instance, dict) and isinstance(e.validator_value, list):
        return [(_field([*base, r]), "is required") for r in e.validator_value if r not in e.instance]
    if e.validator == "additionalProperties" and isinstance(e.instance, dict):
        schema = e.schema if isinstance(e.schema, dict) else {}
        known = set(schema.get("properties", {}))
        return [(_field([*base, k]), "is not an argument of this tool") for k in e.instance if k not in known]
    if e.validator == "type":
        return [(_field(base), f"should be of type {e.validator_value}")]
    if e.validator == "enum":
        return [(_field(base), f"should be one of {e.validator_value}")]
    return [(_field(base), f"does not satisfy `{e.validator}: {e.validator_value}`")]


async def _run(spec: ToolSpec, args: dict[str, Any]) -> Any:
    if spec.is_async:
        return await spec.fn(**args)
    result = await asyncio.to_thread(spec.fn, **args)  # to_thread copies the context variables
    if inspect.isawaitable(result):
        result = await result
    return result


def _record(name: str, args: Any, result: Any, status: str, latency_ms: int, error: str | None) -> None:
    ctx = current()
    if not ctx.run_id or not ctx.record_calls:
        return
    try:
        from flows.store import visits as visit_store

        visit_store.record_tool_call(ctx.run_id, name, visit_id=None if ctx.workstream_id else ctx.visit_id,
                                     args=redact(mask_secrets(to_json(args))), result=redact(mask_secrets(result)),
                                     status=status, latency_ms=latency_ms, error=redact(error),
                                     workstream_id=ctx.workstream_id)
    except Exception:  # noqa: BLE001
        # The tool already ran (it may have had effects): failing the call now would make a retry
        # repeat them. The store's own failure shows up at the visit's checkpoint anyway.
        log.warning("could not record the call of tool `%s` in run %s", name, ctx.run_id, exc_info=True)


async def _arecord(*fields: Any) -> None:
    ctx = current()
    if ctx.run_id and ctx.record_calls:  # a store write blocks: keep it off the event loop (parallel branches)
        await asyncio.to_thread(_record, *fields)


async def invoke(name: str, args: dict[str, Any] | None = None) -> Any:
    """Call tool ``name`` with ``args``; returns its JSON-normalised result.

    Raises :class:`UnknownTool`, :class:`ToolArgumentError`, :class:`ToolError` (a refusal or a
    tool server's error answer) or :class:`ToolFailed` (the tool's own exception, as
    ``.original`` and ``__cause__``).
    """
    args = {} if args is None else args
    started = time.perf_counter()

    def elapsed() -> int:
        return int((time.perf_counter() - started) * 1000)

    try:
        spec = await lookup(name)
        checked = _validate(spec, args)
        # a test case may stand in for the tool (ergon test): the arguments are still checked
        stand_ins = STAND_INS.get()
        replaced, result = stand_ins.tool(name) if stand_ins is not None else (False, None)
        result = to_json(result if replaced else await _run(spec, checked))
    except ToolError as exc:
        await _arecord(name, args, None, "error", elapsed(), str(exc))
        raise
    except Exception as exc:  # the tool's own failure; BaseException (cancellation) passes through
        err = wrap_failure(name, exc)
        await _arecord(name, args, None, "error", elapsed(), str(err))
        raise err from exc
    await _arecord(name, args, result, "ok", elapsed(), None)
    return result
