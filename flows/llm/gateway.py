"""The model gateway: one ``complete()`` for every LLM call Ergon makes.

Which model answers (``req.model``):

1. an environment name (``definitions/environments/*.yaml``) → its models in failover order, each
   called as a model string is (retried, then the next model), or for ``load_balance`` its
   litellm Router (weighted; see :mod:`flows.llm.environments`);
2. any other string → that litellm model string (``openai/gpt-4o-mini``, ``ollama/llama3``, …),
   with litellm reading the usual provider variables (``OPENAI_API_KEY``, ``OPENAI_BASE_URL``,
   …); 429/5xx/timeouts are retried with exponential backoff here, every attempt recorded, all
   of them within the call's ``deadline`` (default 180 s) — a hung endpoint fails the call then,
   not after retries × timeout — and a failure names the fault in words (timed out, rate
   limited, server error, a body that is not a JSON completion, no choices);
3. None → ``ERGON_MODEL`` (a model string or an environment name), else the built-in offline
   model (:mod:`flows.llm.offline`).

Structured output: when the request has a ``response_schema`` and litellm says the model (every
model of the environment) supports JSON-schema mode, the schema goes out as
``response_format: json_schema`` (``strict`` when the schema meets OpenAI's strict rules);
otherwise the system prompt gets an instruction carrying the schema. Either way the caller
validates the answer (:mod:`flows.llm.structured`).

Around every call: resume reuse (:mod:`flows.llm.records`), cassette replay/record
(:mod:`flows.llm.cassettes`), cost (litellm's price, else the environment's per-token price,
else 0 with ``cost_source: "unpriced"``), and one ``llm_calls`` row when ``req.run_id`` is set,
failed calls included.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import re
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from compiler.ir import EnvironmentDef
from flows.llm import cassettes, records
from flows.llm.offline import MODEL as OFFLINE_MODEL
from flows.llm.offline import complete_offline
from flows.llm.types import LlmError, LlmRequest, LlmResponse, ToolCallRequest

__all__ = ["OFFLINE_MODEL", "Target", "backoff_seconds", "complete", "default_environments", "describe_fault",
           "resolve_target", "retryable",
           "with_schema_instruction"]

#: Retries of a plain model string (environments have their own ``retries``).
RETRIES = int(os.environ.get("ERGON_LLM_RETRIES", "2"))
BACKOFF_BASE_SECONDS = 0.5
BACKOFF_MAX_SECONDS = 8.0
#: The backoff's jitter has its own generator, not :mod:`random`'s shared one (see
#: :mod:`flows.runtime.attempts`).
_RANDOM = random.Random()
DEFAULT_TIMEOUT_SECONDS = 120.0
#: All attempts of one call together (the ``deadline`` parameter): a hung endpoint fails the
#: node within this, never after retries × timeout.
DEFAULT_DEADLINE_SECONDS = float(os.environ.get("ERGON_LLM_DEADLINE_SECONDS", "180"))
#: The sleep between retries; tests replace it to record the backoff without waiting.
sleep = asyncio.sleep


@dataclass(frozen=True)
class Target:
    """Where a request goes: ``offline``, a litellm ``model`` string, or an ``environment``."""

    kind: str
    name: str
    env: EnvironmentDef | None = None


# --------------------------------------------------------------------------------------------
# Model resolution

_env_cache: dict[Path, dict[str, EnvironmentDef]] = {}
_env_lock = threading.Lock()


def default_environments() -> dict[str, EnvironmentDef]:
    """The environments of ``definitions/`` (loaded once per folder)."""
    from flows.settings import definitions_dir

    folder = definitions_dir().resolve()
    with _env_lock:
        if folder not in _env_cache:
            envs: dict[str, EnvironmentDef] = {}
            if folder.is_dir():
                from compiler import load_workspace

                ws = load_workspace([folder])
                for name, unit in ws.named("environment").items():
                    if isinstance(unit.defn, EnvironmentDef):
                        envs[name] = unit.defn
            _env_cache[folder] = envs
        return _env_cache[folder]


def resolve_target(model: str | None, environments: Mapping[str, EnvironmentDef] | None = None) -> Target:
    """Which model (or environment) answers a request naming ``model``."""
    name = model or os.environ.get("ERGON_MODEL") or None
    if not name or name == OFFLINE_MODEL:
        return Target("offline", OFFLINE_MODEL)
    if environments is not None and name in environments:
        return Target("environment", name, environments[name])
    # Environment names have no provider prefix; only such names are looked up in definitions/.
    if environments is None and "/" not in name:
        env = default_environments().get(name)
        if env is not None:
            return Target("environment", name, env)
    return Target("model", name)


# --------------------------------------------------------------------------------------------
# The call


async def complete(req: LlmRequest, *, environments: Mapping[str, EnvironmentDef] | None = None) -> LlmResponse:
    """Answer ``req`` (see the module docstring); raises :class:`LlmError` when it cannot."""
    target = resolve_target(req.model, environments)
    key = cassettes.cassette_key(target.name, req.messages, req.tools, req.response_schema)

    reused = records.reusable(req, key)
    if reused is not None:
        records.record(req, model=reused.model, messages=req.messages, resp=reused, cassette_key=key)
        return reused

    mode = cassettes.active()
    if mode.replay is not None:
        return _replay(req, target, key, mode.replay)

    started = time.perf_counter()
    sent = req.messages
    try:
        if target.kind == "offline":
            resp = complete_offline(req)
        else:
            from flows.llm.environments import failover_models, model_supports_response_schema, router_for

            direct = failover_models(target.env) if target.env is not None else None
            router = router_for(target.env) if target.env is not None and direct is None else None
            models = [m.entry.model for m in direct] if direct is not None else [target.name]
            json_mode = req.response_schema is not None and (
                router.supports_response_schema() if router is not None
                else all(model_supports_response_schema(m) for m in models)
            )
            sent, extra = _structured_args(req, json_mode)
            if router is not None:
                resp = await _call_router(req, router, sent, extra)
            elif direct is not None:
                resp = await _call_failover(req, direct, sent, extra, key)
            else:
                resp = await _call_model(req, target.name, sent, extra, key)
            resp.raw = {**(resp.raw or {}), "structured_mode": (
                None if req.response_schema is None else "json_schema" if json_mode else "instructions")}
    except Exception as exc:
        from flows.llm.environments import scrub

        message = scrub(str(exc) if isinstance(exc, LlmError) else describe_fault(exc))
        records.record(req, model=target.name, messages=sent, resp=None, cassette_key=key, error=message)
        if isinstance(exc, LlmError):
            raise
        raise LlmError(f"model call to `{target.name}` failed: {message}") from None
    resp.latency_ms = (time.perf_counter() - started) * 1000
    resp.cassette_key = key
    if mode.record is not None:
        cassettes.Cassette.at(mode.record).put(key, {
            "model": target.name,
            "messages": req.messages,
            "response": records.response_record(resp),
            "tokens_in": resp.tokens_in, "tokens_out": resp.tokens_out, "cost_usd": resp.cost_usd,
            "offline": resp.offline,
        })
    records.record(req, model=resp.model or target.name, messages=sent, resp=resp, cassette_key=key)
    return resp


def _replay(req: LlmRequest, target: Target, key: str, path: Path) -> LlmResponse:
    if not path.is_file():
        error = f"cassette {path} does not exist (record it with --record / ERGON_CASSETTE_RECORD)"
        records.record(req, model=target.name, messages=req.messages, resp=None, cassette_key=key, error=error)
        raise LlmError(error)
    entry = cassettes.Cassette.at(path).get(key)
    if entry is None:
        error = (f"cassette miss: no recorded response for model `{target.name}` with this request "
                 f"(key {key[:16]}…) in {path}; the prompt, tools, schema or model changed since it was recorded")
        records.record(req, model=target.name, messages=req.messages, resp=None, cassette_key=key, error=error)
        raise LlmError(error)
    # Replaying costs nothing; the tokens are the recorded ones.
    resp = records.response_from_record(entry.get("response") or {}, model=entry.get("model", target.name),
                                        tokens_in=int(entry.get("tokens_in", 0)), tokens_out=int(entry.get("tokens_out", 0)),
                                        offline=bool(entry.get("offline", False)))
    resp.raw = {**(resp.raw or {}), "replayed": True}
    resp.cassette_key = key
    records.record(req, model=resp.model, messages=req.messages, resp=resp, cassette_key=key)
    return resp


# --------------------------------------------------------------------------------------------
# Structured output

_NAME = re.compile(r"[^A-Za-z0-9_-]+")


def _strict_ok(schema: Any) -> bool:
    """Whether OpenAI's strict mode accepts ``schema`` (closed objects, every property required)."""
    if isinstance(schema, list):
        return all(_strict_ok(s) for s in schema)
    if not isinstance(schema, dict):
        return True
    types = schema.get("type")
    is_object = types == "object" or (isinstance(types, list) and "object" in types) or "properties" in schema
    if is_object:
        props = schema.get("properties") or {}
        if schema.get("additionalProperties") is not False or set(schema.get("required") or []) != set(props):
            return False
    children: list[Any] = []
    for key in ("properties", "$defs", "definitions"):
        children.extend((schema.get(key) or {}).values())
    for key in ("items", "anyOf"):
        if key in schema:
            children.append(schema[key])
    return all(_strict_ok(child) for child in children)


def with_schema_instruction(messages: list[dict[str, Any]], schema: dict[str, Any]) -> list[dict[str, Any]]:
    """``messages`` with an instruction to answer with JSON valid against ``schema``."""
    text = ("Answer with one JSON value only — no prose, no code fences — valid against this JSON Schema:\n"
            + json.dumps(schema, ensure_ascii=False, sort_keys=True))
    out = [dict(m) for m in messages]
    first_system = next((m for m in out if m.get("role") == "system" and isinstance(m.get("content"), str)), None)
    if first_system is not None:
        first_system["content"] = f"{first_system['content'].rstrip()}\n\n{text}"
    else:
        out.insert(0, {"role": "system", "content": text})
    return out


def _structured_args(req: LlmRequest, json_mode: bool) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    if req.response_schema is None:
        return req.messages, {}
    if not json_mode:
        return with_schema_instruction(req.messages, req.response_schema), {}
    name = _NAME.sub("_", str(req.response_schema.get("title") or "result"))[:64] or "result"
    return req.messages, {"response_format": {"type": "json_schema", "json_schema": {
        "name": name, "schema": req.response_schema, "strict": _strict_ok(req.response_schema)}}}


# --------------------------------------------------------------------------------------------
# litellm calls


#: How litellm and the SDK report a body that is not JSON (they call it a server error).
_NOT_JSON = re.compile(r"Empty or invalid response|Unterminated string|Expecting (?:value|property name|',' delimiter)|"
                       r"JSONDecodeError|Extra data: line")


def describe_fault(exc: BaseException) -> str:
    """A provider failure in words: what went wrong, then the provider's own message (shortened)."""
    status = getattr(exc, "status_code", None)
    text = str(exc)
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError)) or type(exc).__name__ == "Timeout":
        words = "timed out"
    elif status == 429:
        words = "rate limited (HTTP 429)"
    elif isinstance(exc, json.JSONDecodeError) or _NOT_JSON.search(text):
        words = "the response is not a JSON completion (an HTML error page, or a body cut short)"
    elif isinstance(status, int) and status >= 500:
        words = f"server error (HTTP {status})"
    elif isinstance(status, int) and status >= 400:
        words = f"refused (HTTP {status})"
    elif type(exc).__name__ == "APIConnectionError":
        words = "could not connect"
    else:
        words = type(exc).__name__
    detail = " ".join(text.split())[:300]
    return f"{words}: {detail}" if detail else words


def retryable(exc: BaseException) -> bool:
    """Whether a provider error is worth another attempt (rate limits, server errors, timeouts)."""
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError)):  # our own per-attempt guard
        return True
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        return status in (408, 409, 429) or status >= 500
    return type(exc).__name__ in ("Timeout", "APIConnectionError", "ServiceUnavailableError", "RateLimitError",
                                  "InternalServerError", "BadGatewayError")


def _retry_after(exc: BaseException) -> float | None:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    try:
        value = float(headers.get("retry-after")) if headers is not None and headers.get("retry-after") else None
    except (TypeError, ValueError):
        return None
    return value if value is not None and 0 < value <= 60 else None


def backoff_seconds(retry: int, exc: BaseException | None = None) -> float:
    """Sleep before retry number ``retry`` (0-based): the provider's Retry-After, else 0.5·2ⁿ s with jitter."""
    hinted = _retry_after(exc) if exc is not None else None
    if hinted is not None:
        return hinted
    return min(BACKOFF_MAX_SECONDS, BACKOFF_BASE_SECONDS * 2 ** retry) * (0.75 + _RANDOM.random() / 2)


async def _call_model(req: LlmRequest, model: str, messages: list[dict[str, Any]], extra: dict[str, Any],
                      key: str = "", parameters: Mapping[str, Any] | None = None) -> LlmResponse:
    """``model`` called with the request's ``parameters`` (or the ones given), retried here."""
    from flows.llm._litellm import litellm
    from flows.llm.environments import scrub

    lib = litellm()
    params = dict(req.parameters if parameters is None else parameters)
    retries = int(params.pop("retries", RETRIES))
    deadline = float(params.pop("deadline", DEFAULT_DEADLINE_SECONDS))
    per_attempt = float(params.get("timeout") or DEFAULT_TIMEOUT_SECONDS)
    ends = time.monotonic() + deadline
    # Ergon is the only retry loop: the provider SDK must not retry on its own as well.
    params["max_retries"] = 0
    if req.tools:
        params["tools"] = req.tools
    attempt = 0
    while True:
        remaining = ends - time.monotonic()
        if remaining <= 0:
            raise _past_deadline(model, deadline, attempt, "set `deadline` in the parameters to allow more")
        params["timeout"] = min(per_attempt, remaining)
        try:
            # the SDK's own timeout is per read; wait_for holds the whole attempt to what remains
            raw = await asyncio.wait_for(lib.acompletion(model=model, messages=messages, **extra, **params),
                                         timeout=params["timeout"] + 0.5)
            break
        except Exception as exc:
            if attempt >= retries or not retryable(exc) or ends - time.monotonic() <= 0:
                if isinstance(exc, (asyncio.TimeoutError, TimeoutError)) and ends - time.monotonic() <= 0.5:
                    raise _past_deadline(model, deadline, attempt + 1, f"the last {describe_fault(exc)}") from None
                raise
            # a retried attempt is recorded too: the call log shows every HTTP attempt
            records.record(req, model=model, messages=messages, resp=None, cassette_key=key,
                           error=f"attempt {attempt + 1} of {retries + 1}: {scrub(describe_fault(exc))} (retried)")
            await sleep(min(backoff_seconds(attempt, exc), max(0.0, ends - time.monotonic())))
            attempt += 1
    resp = _to_response(raw, model)
    resp.raw = {**(resp.raw or {}), "retries": attempt}
    if resp.cost_usd == 0.0 and resp.raw.get("cost_source") == "unpriced":
        _price_from_params(resp, req.parameters if parameters is None else parameters)
    return resp


def _past_deadline(model: str, deadline: float, attempts: int, detail: str) -> LlmError:
    return LlmError(f"model call to `{model}` got no answer within its deadline of {deadline:g} s "
                    f"({attempts} attempt(s); {detail})")


async def _call_failover(req: LlmRequest, models: list[Any], messages: list[dict[str, Any]], extra: dict[str, Any],
                         key: str) -> LlmResponse:
    """A failover environment (:func:`flows.llm.environments.failover_models`): each model called
    as a model string is, with its entry's defaults under the request's parameters and the
    environment's retries and timeout, until one answers; every attempt is recorded, and the
    call's ``deadline`` covers them all."""
    from flows.llm.environments import cool_down, in_cooldown_order, scrub

    env = models[0].env
    deadline = float(req.parameters.get("deadline", DEFAULT_DEADLINE_SECONDS))
    ends = time.monotonic() + deadline
    ordered = in_cooldown_order(models)
    for tried, model in enumerate(ordered):
        params = {**model.defaults, **req.parameters, "retries": env.retries,
                  "deadline": max(0.0, ends - time.monotonic())}
        params.setdefault("timeout", env.timeout_seconds)
        try:
            resp = await _call_model(req, model.entry.model, messages, {**extra, **model.connection}, key, params)
        except Exception as exc:
            following = ordered[tried + 1] if tried + 1 < len(ordered) else None
            if following is None or ends - time.monotonic() <= 0:
                raise
            cool_down(model)
            fault = scrub(str(exc) if isinstance(exc, LlmError) else describe_fault(exc))
            records.record(req, model=model.entry.model, messages=messages, resp=None, cassette_key=key,
                           error=f"{fault} (failing over to `{following.deployment}`)")
            continue
        resp.raw = {**(resp.raw or {}), "environment": env.name, "deployment": model.deployment, "fallbacks": tried}
        _price_from_entry(resp, model.entry)
        return resp
    raise LlmError(f"environment `{env.name}` lists no models")  # never: a definition has one at least


async def _call_router(req: LlmRequest, router: Any, messages: list[dict[str, Any]], extra: dict[str, Any]) -> LlmResponse:
    params = dict(req.parameters)
    params.pop("retries", None)
    # the Router retries and fails over itself; its calls are bounded by each attempt's timeout
    params.pop("deadline", None)
    if req.tools:
        params["tools"] = req.tools
    raw = await router.router.acompletion(model=router.entry_group, messages=messages, **extra, **params)
    hidden = getattr(raw, "_hidden_params", None) or {}
    deployment = router.deployment(hidden.get("model_id"))
    model = hidden.get("litellm_model_name") or (deployment.entry.model if deployment else router.env.name)
    resp = _to_response(raw, model)
    headers = hidden.get("additional_headers") or {}
    resp.raw = {**(resp.raw or {}), "environment": router.env.name,
                "deployment": (deployment.entry.name or deployment.entry.model) if deployment else None,
                "retries": headers.get("x-litellm-attempted-retries"),
                "fallbacks": headers.get("x-litellm-attempted-fallbacks")}
    _price_from_entry(resp, deployment.entry if deployment else None)
    return resp


def _price_from_entry(resp: LlmResponse, entry: Any) -> None:
    """A call litellm could not price gets its environment entry's price, when the entry has one."""
    from flows.llm.environments import entry_cost

    if (resp.raw or {}).get("cost_source") == "unpriced":
        price = entry_cost(entry, resp.tokens_in, resp.tokens_out)
        if price is not None:
            resp.cost_usd, resp.raw = price, {**(resp.raw or {}), "cost_source": "environment"}


def _price_from_params(resp: LlmResponse, params: Mapping[str, Any]) -> None:
    cin, cout = params.get("input_cost_per_token"), params.get("output_cost_per_token")
    if cin is not None or cout is not None:
        resp.cost_usd = resp.tokens_in * float(cin or 0) + resp.tokens_out * float(cout or 0)
        resp.raw = {**(resp.raw or {}), "cost_source": "parameters"}


#: Models litellm could not price (finding that out costs ~2.5 ms a call): asked once per process.
_UNPRICED: set[str] = set()


def _to_response(raw: Any, model: str) -> LlmResponse:
    from flows.llm._litellm import litellm

    if not getattr(raw, "choices", None):
        raise LlmError(f"the answer of `{model}` holds no choices (an empty `choices` list): nothing to read")
    choice = raw.choices[0]
    message = choice.message
    calls = []
    for i, call in enumerate(getattr(message, "tool_calls", None) or []):
        text = call.function.arguments or "{}"
        try:
            args = json.loads(text) if isinstance(text, str) else dict(text)
            if not isinstance(args, dict):
                args = {"_raw_arguments": text}
        except json.JSONDecodeError:
            # Kept for the agent loop to report back to the model as a tool error.
            args = {"_raw_arguments": text}
        calls.append(ToolCallRequest(id=call.id or f"call_{i}", name=call.function.name, arguments=args))
    usage = getattr(raw, "usage", None)
    tokens_in = int(getattr(usage, "prompt_tokens", 0) or 0)
    tokens_out = int(getattr(usage, "completion_tokens", 0) or 0)
    hidden = getattr(raw, "_hidden_params", None) or {}
    cost, source = hidden.get("response_cost"), "litellm"
    if cost is None and model in _UNPRICED:
        cost, source = 0.0, "unpriced"
    elif cost is None:
        try:
            cost = litellm().completion_cost(completion_response=raw)
        except Exception:  # a model litellm does not price: never fail a call over accounting
            cost, source = 0.0, "unpriced"
            _UNPRICED.add(model)
    return LlmResponse(content=message.content, tool_calls=calls, model=model, tokens_in=tokens_in,
                       tokens_out=tokens_out, cost_usd=float(cost or 0.0),
                       raw={"finish_reason": getattr(choice, "finish_reason", None), "cost_source": source})

