"""LLM calls in the store: recording every call, and reusing completed calls on resume.

Every call made for a run (``req.run_id`` set) is one ``llm_calls`` row — successful, failed
(with its error), replayed from a cassette, or reused. The stored response is
:func:`response_record`: content, tool calls, the model that answered and how (environment,
deployment, retries, fallbacks, where the cost came from).

**Resume never repeats a completed call.** The engine redoes an unfinished node in a *new*
visit (same run, node, item and attempt number, higher sequence). Before calling a model the
gateway asks :func:`reusable` whether such an earlier, unfinished visit already got an answer to
the same request (same cassette key); the n-th identical request of the new visit takes the
n-th answer of the earlier one. The reused answer is recorded again for the new visit with zero
cost and tokens (the run already paid for it) and ``reused_from`` pointing at the original row.
Retries inside one execution have a higher attempt number, so they do call the model again.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

from flows.secrets.redaction import redact
from flows.llm.types import LlmRequest, LlmResponse, ToolCallRequest

__all__ = ["REUSE_LOOKUP", "record", "response_from_record", "response_record", "reusable"]

#: Whether the running execution can find answers of earlier, unfinished visits. The engine sets
#: it False for a run that starts with no visits at all: within one execution a node's unfinished
#: visit is never followed by another visit with the same item and attempt, so there is nothing to
#: reuse and the store is not asked (a query on the path of every model call).
REUSE_LOOKUP: ContextVar[bool] = ContextVar("ergon_llm_reuse_lookup", default=True)


def response_record(resp: LlmResponse) -> dict[str, Any]:
    out: dict[str, Any] = {
        "content": resp.content,
        "tool_calls": [{"id": t.id, "name": t.name, "arguments": t.arguments} for t in resp.tool_calls],
        "model": resp.model,
    }
    for key, value in (resp.raw or {}).items():
        out.setdefault(key, value)
    return out


def response_from_record(data: dict[str, Any], *, model: str, tokens_in: int = 0, tokens_out: int = 0,
                         cost_usd: float = 0.0, offline: bool = False) -> LlmResponse:
    calls = [ToolCallRequest(id=str(c.get("id", "")), name=str(c.get("name", "")), arguments=dict(c.get("arguments") or {}))
             for c in data.get("tool_calls") or []]
    raw = {k: v for k, v in data.items() if k not in ("content", "tool_calls", "model")}
    return LlmResponse(content=data.get("content"), tool_calls=calls, model=str(data.get("model") or model),
                       tokens_in=tokens_in, tokens_out=tokens_out, cost_usd=cost_usd, offline=offline, raw=raw)


def record(req: LlmRequest, *, model: str, messages: list[dict[str, Any]], resp: LlmResponse | None,
           cassette_key: str, error: str | None = None, offline: bool = False) -> None:
    """Store one call of ``req`` (no-op without a run)."""
    if req.run_id is None:
        return
    from flows.store import visits as visit_store

    # a model can echo a key back: what is kept never holds an opened secret
    visit_store.record_llm_call(
        req.run_id, model, visit_id=req.visit_id, messages=redact(messages),
        response=redact(response_record(resp)) if resp is not None else None, tools=req.tools,
        tokens_in=resp.tokens_in if resp else 0, tokens_out=resp.tokens_out if resp else 0,
        cost_usd=resp.cost_usd if resp else 0.0, latency_ms=round(resp.latency_ms) if resp else None,
        attempt=req.attempt, repair=req.repair, cassette_key=cassette_key,
        offline=resp.offline if resp else offline, error=redact(error), workstream_id=req.workstream_id,
    )


def reusable(req: LlmRequest, cassette_key: str) -> LlmResponse | None:
    """The answer an earlier, unfinished visit of the same node got to this request, if any."""
    if req.run_id is None or req.visit_id is None or not REUSE_LOOKUP.get():
        return None
    from flows.store import visits as visit_store

    found = visit_store.earlier_llm_answer(req.visit_id, cassette_key)
    if found is None:
        return None
    call_id, model, offline, response = found
    data = dict(response or {})
    original = data.get("reused_from") or call_id
    resp = response_from_record(data, model=model, offline=offline)
    resp.raw = {**(resp.raw or {}), "reused_from": original}
    resp.cassette_key = cassette_key
    return resp
