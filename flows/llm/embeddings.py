"""Embeddings: ``embed(texts)`` turns texts into vectors through litellm's embedding API.

Which model embeds (the *embedding model*, a name):

1. the ``model`` argument (the activities' ``model`` parameter), else
2. ``ERGON_EMBEDDING_MODEL``, else
3. the built-in offline embedder ``ergon/offline-embedding`` (:mod:`flows.llm.offline_embedding`).

The name is resolved as chat models are (:func:`flows.llm.gateway.resolve_target`): the name of
an ``environment`` definition → that environment's litellm Router (``Router.aembedding``, with its
failover, load balancing and ``secret:``/``env:``/``prefect-secret:``/``prefect-var:`` keys); any
other string → a litellm model string (``litellm.aembedding``: ``openai/text-embedding-3-small``,
``ollama/nomic-embed-text``…, reading the provider's usual variables), with 429/5xx/timeouts
retried with backoff as the gateway does. ``ERGON_MODEL`` is never used: a chat model is not an
embedding model. An environment used for embeddings lists embedding models, and all of them
should be the same model (the same model at several endpoints): vectors of different models are
not comparable, and the document index is kept per embedding-model *name*.

Texts go out in batches of :data:`BATCH_SIZE`; each batch is one call, recorded as an
``llm_calls`` row of the run when ``run_id`` is set (as chat calls are: model, tokens, cost,
latency, error). The row's ``messages`` hold each input cut to :data:`RECORDED_CHARS`
characters with its length, and its ``response`` the count and dimensions, not the vectors
(a document's vectors are in the index). Keys live only in the Router or the provider's
variables; error texts are scrubbed of every key Ergon resolved.

Cassettes: ``ERGON_CASSETTE_RECORD`` / ``--record`` store each batch's vectors, and replay
answers from them and never falls through to a model (a miss raises :class:`LlmError`). The
offline embedder needs neither: it is computed, the same everywhere. Embedding calls are not
reused on resume as chat calls are; the document index keeps document vectors across runs, so
only query texts are embedded again.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from compiler.ir import EnvironmentDef
from flows.llm import cassettes
from flows.llm.offline import MODEL as OFFLINE_CHAT_MODEL
from flows.llm.offline import estimate_tokens
from flows.llm.offline_embedding import MODEL as OFFLINE_MODEL
from flows.llm.offline_embedding import embed_offline
from flows.llm.types import LlmError

__all__ = ["BATCH_SIZE", "ENV_VAR", "OFFLINE_MODEL", "Embeddings", "embed", "embedding_model"]

#: The environment variable naming the default embedding model.
ENV_VAR = "ERGON_EMBEDDING_MODEL"
#: Inputs per request (providers take more, but a batch is also the unit of a retry).
BATCH_SIZE = 64
#: How much of each input an ``llm_calls`` row keeps.
RECORDED_CHARS = 500
DEFAULT_TIMEOUT_SECONDS = 120.0
#: Marks embedding entries in a cassette, so that they never answer a chat request.
_CASSETTE_KIND = "embeddings"


@dataclass(frozen=True)
class Embeddings:
    """The vectors of some texts, in their order, and who made them.

    ``model`` is the embedding model's *name* as configured (the index is kept per name);
    ``answered_by`` the litellm model that answered (an environment's deployment).
    """

    vectors: list[list[float]]
    model: str
    answered_by: str
    dimensions: int
    tokens_in: int = 0
    cost_usd: float = 0.0
    offline: bool = False


def embedding_model(model: str | None = None) -> str:
    """The embedding model's name: ``model``, else ``ERGON_EMBEDDING_MODEL``, else the offline embedder."""
    return model or os.environ.get(ENV_VAR) or OFFLINE_MODEL


@dataclass
class _Batch:
    vectors: list[list[float]]
    answered_by: str
    tokens_in: int
    cost_usd: float
    extra: dict[str, Any]


async def embed(texts: Sequence[str], *, model: str | None = None,
                environments: Mapping[str, EnvironmentDef] | None = None,
                parameters: Mapping[str, Any] | None = None,
                run_id: str | None = None, visit_id: str | None = None) -> Embeddings:
    """The vectors of ``texts`` (see the module docstring); raises :class:`LlmError` when it cannot.

    ``parameters`` go to litellm as they are (``dimensions``, ``api_base``…; ``retries`` is the
    number of retries of a plain model string).
    """
    name = embedding_model(model)
    if not texts:
        raise LlmError("nothing to embed")
    for i, text in enumerate(texts):
        if not isinstance(text, str) or not text.strip():
            raise LlmError(f"input {i} is empty: there is nothing to embed")
    if name == OFFLINE_CHAT_MODEL:
        raise LlmError(f"`{OFFLINE_CHAT_MODEL}` is the offline chat model; the offline embedder is `{OFFLINE_MODEL}`")

    from flows.llm.gateway import resolve_target

    target = None if name == OFFLINE_MODEL else resolve_target(name, environments)
    vectors: list[list[float]] = []
    answered_by, tokens, cost = name, 0, 0.0
    for start in range(0, len(texts), BATCH_SIZE):
        batch = list(texts[start:start + BATCH_SIZE])
        began = time.perf_counter()
        key = cassettes.cassette_key(name, _inputs(batch, whole=True), None, _CASSETTE_KIND)
        try:
            if target is None:
                got = _Batch([embed_offline(t) for t in batch], OFFLINE_MODEL, estimate_tokens(batch), 0.0, {})
            else:
                got = await _remote(name, target, batch, key, dict(parameters or {}))
            _check_shape(got.vectors, batch, vectors)
        except Exception as exc:
            from flows.llm.environments import scrub

            message = scrub(str(exc) if isinstance(exc, LlmError) else f"{type(exc).__name__}: {exc}")
            _record(run_id, visit_id, name, batch, None, key, (time.perf_counter() - began) * 1000,
                    offline=target is None, error=message)
            if isinstance(exc, LlmError):
                raise LlmError(message) from None
            raise LlmError(f"embedding call to `{name}` failed: {message}") from None
        _record(run_id, visit_id, name, batch, got, key, (time.perf_counter() - began) * 1000, offline=target is None)
        vectors.extend(got.vectors)
        answered_by, tokens, cost = got.answered_by, tokens + got.tokens_in, cost + got.cost_usd
    return Embeddings(vectors=vectors, model=name, answered_by=answered_by, dimensions=len(vectors[0]),
                      tokens_in=tokens, cost_usd=cost, offline=target is None)


def _check_shape(got: list[list[float]], batch: list[str], before: list[list[float]]) -> None:
    if len(got) != len(batch):
        raise LlmError(f"the model returned {len(got)} embeddings for {len(batch)} inputs")
    sizes = {len(v) for v in got} | ({len(before[0])} if before else set())
    if len(sizes) != 1 or 0 in sizes:
        raise LlmError(f"the model returned embeddings of different or no dimensions ({sorted(sizes)})")


async def _remote(name: str, target: Any, batch: list[str], key: str, params: dict[str, Any]) -> _Batch:
    mode = cassettes.active()
    if mode.replay is not None:
        return _replay(name, key, mode.replay)
    if target.env is not None:
        got = await _call_router(target.env, batch, params)
    else:
        got = await _call_model(target.name, batch, params)
    if mode.record is not None:
        cassettes.Cassette.at(mode.record).put(key, {
            "model": got.answered_by, "kind": _CASSETTE_KIND, "inputs": _inputs(batch),
            "vectors": got.vectors, "tokens_in": got.tokens_in, "cost_usd": got.cost_usd,
        })
    return got


def _replay(name: str, key: str, path: Any) -> _Batch:
    if not path.is_file():
        raise LlmError(f"cassette {path} does not exist (record it with --record / ERGON_CASSETTE_RECORD)")
    entry = cassettes.Cassette.at(path).get(key)
    if entry is None or entry.get("kind") != _CASSETTE_KIND:
        raise LlmError(f"cassette miss: no recorded embeddings for model `{name}` with these inputs "
                       f"(key {key[:16]}…) in {path}; the inputs or the model changed since it was recorded")
    # replaying costs nothing; the tokens are the recorded ones
    return _Batch([[float(x) for x in v] for v in entry.get("vectors") or []], str(entry.get("model") or name),
                  int(entry.get("tokens_in", 0)), 0.0, {"replayed": True})


async def _call_model(model: str, batch: list[str], params: dict[str, Any]) -> _Batch:
    from flows.llm import gateway
    from flows.llm._litellm import litellm

    retries = int(params.pop("retries", gateway.RETRIES))
    params.setdefault("timeout", DEFAULT_TIMEOUT_SECONDS)
    params["max_retries"] = 0  # Ergon is the only retry loop, as for chat calls
    attempt = 0
    while True:
        try:
            raw = await litellm().aembedding(model=model, input=batch, **params)
            break
        except Exception as exc:
            if attempt >= retries or not gateway.retryable(exc):
                raise
            await gateway.sleep(gateway.backoff_seconds(attempt, exc))
            attempt += 1
    cost, source = _cost(raw, model)
    return _Batch(_vectors(raw), model, _prompt_tokens(raw), cost, {"retries": attempt, "cost_source": source})


async def _call_router(env: EnvironmentDef, batch: list[str], params: dict[str, Any]) -> _Batch:
    from flows.llm.environments import entry_cost, router_for

    params.pop("retries", None)  # the environment has its own
    router = router_for(env)
    raw = await router.router.aembedding(model=router.entry_group, input=batch, **params)
    hidden = getattr(raw, "_hidden_params", None) or {}
    deployment = router.deployment(hidden.get("model_id"))
    model = hidden.get("litellm_model_name") or (deployment.entry.model if deployment else env.name)
    tokens = _prompt_tokens(raw)
    cost, source = _cost(raw, model)
    if source == "unpriced":
        price = entry_cost(deployment.entry if deployment else None, tokens, 0)
        if price is not None:
            cost, source = price, "environment"
    return _Batch(_vectors(raw), model, tokens, cost, {
        "environment": env.name, "deployment": (deployment.entry.name or deployment.entry.model) if deployment else None,
        "cost_source": source})


def _vectors(raw: Any) -> list[list[float]]:
    """The vectors of an embedding response, in input order (items may be mappings or objects)."""
    def get(item: Any, field: str) -> Any:
        return item.get(field) if isinstance(item, dict) else getattr(item, field, None)

    items = sorted(raw.data or [], key=lambda item: get(item, "index") or 0)
    return [[float(x) for x in get(item, "embedding") or []] for item in items]


def _prompt_tokens(raw: Any) -> int:
    usage = getattr(raw, "usage", None)
    return int(getattr(usage, "prompt_tokens", 0) or 0)


#: Models litellm could not price: asked once per process.
_UNPRICED: set[str] = set()


def _cost(raw: Any, model: str) -> tuple[float, str]:
    from flows.llm._litellm import litellm

    hidden = getattr(raw, "_hidden_params", None) or {}
    if hidden.get("response_cost") is not None:
        return float(hidden["response_cost"]), "litellm"
    if model in _UNPRICED:
        return 0.0, "unpriced"
    try:
        return float(litellm().completion_cost(completion_response=raw, model=model) or 0.0), "litellm"
    except Exception:  # a model litellm does not price: never fail a call over accounting
        _UNPRICED.add(model)
        return 0.0, "unpriced"


def _inputs(batch: list[str], *, whole: bool = False) -> list[dict[str, Any]]:
    """The inputs as a cassette key hashes them (whole) or as a record keeps them (cut, with length)."""
    if whole:
        return [{"role": "embedding", "content": t} for t in batch]
    return [{"role": "user", "content": t if len(t) <= RECORDED_CHARS else t[:RECORDED_CHARS] + "…", "chars": len(t)}
            for t in batch]


def _record(run_id: str | None, visit_id: str | None, name: str, batch: list[str], got: _Batch | None, key: str,
            latency_ms: float, *, offline: bool, error: str | None = None) -> None:
    """One ``llm_calls`` row for one batch (no-op without a run)."""
    if run_id is None:
        return
    from flows.store import visits as visit_store

    response = None if got is None else {
        "kind": _CASSETTE_KIND, "model": got.answered_by, "count": len(got.vectors),
        "dimensions": len(got.vectors[0]) if got.vectors else 0, **got.extra}
    visit_store.record_llm_call(
        run_id, got.answered_by if got is not None else name, visit_id=visit_id, messages=_inputs(batch),
        response=response, tokens_in=got.tokens_in if got else 0, cost_usd=got.cost_usd if got else 0.0,
        latency_ms=round(latency_ms), cassette_key=None if offline else key, offline=offline, error=error,
    )
