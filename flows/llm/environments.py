"""Environments: named model lists, called in failover order or balanced by litellm's Router,
with keys resolved at call time.

An :class:`~compiler.ir.EnvironmentDef` lists models in failover order:

* ``strategy: failover`` — called without a Router (:func:`failover_models`): the gateway calls
  each model as it calls a model string, with the entry's endpoint, key, parameters and prices
  and the environment's ``retries`` and ``timeout_seconds``, every attempt recorded, all within
  the gateway's ``deadline``; a model that still fails after its retries hands the call to the
  next one. A model that failed so is *cooling down* for :data:`COOLDOWN_SECONDS` (litellm's
  Router's default): calls in that time try it after the others, not first, so an outage of
  the first model does not cost every call its retries and backoff.
* ``strategy: load_balance`` — a litellm ``Router`` with one model group ``<env>`` holding every
  entry with its ``weight`` (litellm's weighted ``simple-shuffle``); a failed attempt is retried
  in the group and the retry may land on another entry. Embeddings use the Router for either
  strategy (:mod:`flows.llm.embeddings`; a failover Router there: one group per entry and a
  fallback chain ``<env>/0 → [<env>/1, …]``).

Why no Router for failover: under concurrency it cost 2–5 ms of CPU a call beyond the plain
litellm call (its pre-routing, cooldown and logging steps; measured with ``benchmarks/llm.py``
and apart, no Router option removed it), a fifth of a foreach of model calls; and its own
retries were invisible in the call log.

Keys are references, never literals: ``env:VAR`` reads the environment variable ``VAR``;
``secret:NAME`` opens Ergon's encrypted secret ``NAME`` (:mod:`flows.secrets`, stored with
``ergon secrets set NAME``); ``prefect-secret:NAME`` reads the Prefect Secret block ``NAME`` and
``prefect-var:NAME`` the Prefect Variable ``NAME`` (:mod:`flows.prefect.secrets`). A key lives only in the call's parameters (sent as the provider's
auth header) or the Router's deployments; it is never put into messages, records or error texts
(:func:`scrub` removes it from provider error messages).

Routers are cached per environment content and resolved keys, so a changed key or definition
builds a new one, and cooldowns/usage counters persist across calls as litellm intends.
"""

from __future__ import annotations

import functools
import hashlib
import json
import threading
import time
from dataclasses import dataclass
from typing import Any

from compiler.ir import EnvironmentDef, ModelEntry
from flows.llm._litellm import litellm
from flows.secrets import redaction
from flows.llm.types import LlmError

__all__ = ["COOLDOWN_SECONDS", "DirectModel", "EnvRouter", "cool_down", "failover_models", "in_cooldown_order",
           "resolve_key", "router_for", "scrub"]


def resolve_key(reference: str | None, *, where: str) -> str | None:
    """The key a ``secret:NAME`` / ``env:VAR`` / ``prefect-secret:NAME`` / ``prefect-var:NAME``
    reference points at (None when there is none)."""
    from compiler.secret_references import parse
    from flows import secrets

    if reference is None:
        return None
    ref = parse(reference)
    if ref is None:
        raise LlmError(f"{where}: api_key must be `secret:NAME`, `env:VAR`, `prefect-secret:NAME` or "
                       f"`prefect-var:NAME`, not a literal key")
    try:
        return secrets.resolve_reference(reference)
    except secrets.ReferenceNotSet:
        raise LlmError(f"{where}: {reference} is not set (environment variable {ref.name})") from None
    except (LookupError, secrets.SecretError, secrets.SecretKeyError) as exc:
        # the messages name the secret and the key id, never a value
        raise LlmError(f"{where}: {exc}") from None


def scrub(text: str) -> str:
    """``text`` with every secret this process has opened (model keys included) replaced by ``***``."""
    return redaction.redact_text(text)


@dataclass
class Deployment:
    """One environment entry as the Router knows it."""

    id: str
    group: str
    entry: ModelEntry


@dataclass
class EnvRouter:
    """A Router for one environment and what Ergon needs to interpret its answers."""

    env: EnvironmentDef
    router: Any
    entry_group: str
    deployments: dict[str, Deployment]

    def deployment(self, model_id: str | None) -> Deployment | None:
        return self.deployments.get(model_id or "")

    def supports_response_schema(self) -> bool:
        """True when litellm says every model of the environment has a JSON-schema mode."""
        return all(model_supports_response_schema(d.entry.model) for d in self.deployments.values())


@functools.lru_cache(maxsize=256)
def model_supports_response_schema(model: str) -> bool:
    """Asked before every call; litellm looks it up in its model map each time (~0.6 ms)."""
    try:
        return bool(litellm().supports_response_schema(model=model))
    except Exception:  # an unknown provider or model: plain instructions are the safe choice
        return False


def _resolved_keys(env: EnvironmentDef) -> list[str | None]:
    """Each model's key, resolved now (a missing one fails here) and remembered for redaction."""
    keys = [resolve_key(m.api_key, where=f"environment `{env.name}`, model `{m.name or m.model}`") for m in env.models]
    for k in keys:
        if k:
            redaction.remember(k)
    return keys


@dataclass(frozen=True)
class DirectModel:
    """One model of a failover environment, called directly: what the gateway passes litellm."""

    env: EnvironmentDef
    entry: ModelEntry
    connection: dict[str, Any]  # api_base and the resolved api_key (never recorded)
    defaults: dict[str, Any]  # the entry's parameters: a request's own parameters win

    @property
    def deployment(self) -> str:
        return self.entry.name or self.entry.model


def failover_models(env: EnvironmentDef) -> list[DirectModel] | None:
    """``env``'s models in failover order, to call directly; None when it balances load (a Router)."""
    if env.strategy != "failover":
        return None
    out = []
    for entry, key in zip(env.models, _resolved_keys(env), strict=True):
        connection: dict[str, Any] = {}
        if entry.api_base:
            connection["api_base"] = entry.api_base
        if key:
            connection["api_key"] = key
        defaults = entry.parameters.model_dump(exclude_none=True) if entry.parameters is not None else {}
        out.append(DirectModel(env=env, entry=entry, connection=connection, defaults=defaults))
    return out


#: Seconds a failover model that failed after its retries is tried after the others.
COOLDOWN_SECONDS = 5.0
#: (environment, deployment) → when its cooldown ends (monotonic)
_cooling: dict[tuple[str, str], float] = {}


def cool_down(model: DirectModel) -> None:
    """``model`` failed after its retries: try it after the others for :data:`COOLDOWN_SECONDS`."""
    _cooling[(model.env.name, model.deployment)] = time.monotonic() + COOLDOWN_SECONDS


def in_cooldown_order(models: list[DirectModel]) -> list[DirectModel]:
    """``models`` in failover order, the ones cooling down moved to the end (in their order)."""
    if not _cooling:
        return models
    now = time.monotonic()
    cooling = [m for m in models if _cooling.get((m.env.name, m.deployment), 0.0) > now]
    return [m for m in models if m not in cooling] + cooling if cooling else models


_routers: dict[str, EnvRouter] = {}
_routers_lock = threading.Lock()


def router_for(env: EnvironmentDef) -> EnvRouter:
    """The (cached) Router of ``env``; keys are resolved now, so a missing key fails here."""
    keys = _resolved_keys(env)
    fingerprint = hashlib.sha256(
        json.dumps([env.model_dump(mode="json"), keys], sort_keys=True, default=str).encode()
    ).hexdigest()
    with _routers_lock:
        cached = _routers.get(fingerprint)
        if cached is None:
            cached = _routers[fingerprint] = _build(env, keys)
        return cached


def _build(env: EnvironmentDef, keys: list[str | None]) -> EnvRouter:
    model_list: list[dict[str, Any]] = []
    deployments: dict[str, Deployment] = {}
    balance = env.strategy == "load_balance"
    for i, (entry, key) in enumerate(zip(env.models, keys, strict=True)):
        group = env.name if balance else f"{env.name}/{i}"
        params: dict[str, Any] = {"model": entry.model}
        if entry.api_base:
            params["api_base"] = entry.api_base
        if key:
            params["api_key"] = key
        if entry.parameters is not None:
            params.update(entry.parameters.model_dump(exclude_none=True))
        # Prices for models litellm does not price: the Router then reports their cost itself.
        if entry.input_cost_per_token is not None:
            params["input_cost_per_token"] = entry.input_cost_per_token
        if entry.output_cost_per_token is not None:
            params["output_cost_per_token"] = entry.output_cost_per_token
        if balance:
            params["weight"] = entry.weight
        if entry.rpm is not None:
            params["rpm"] = entry.rpm
        dep_id = f"{env.name}:{i}"
        model_list.append({"model_name": group, "litellm_params": params, "model_info": {"id": dep_id}})
        deployments[dep_id] = Deployment(dep_id, group, entry)
    groups = [d.group for d in deployments.values()]
    fallbacks = [] if balance or len(groups) < 2 else [{groups[0]: groups[1:]}]
    router = litellm().Router(
        model_list=model_list,
        fallbacks=fallbacks,
        num_retries=env.retries,
        timeout=env.timeout_seconds,
        routing_strategy="simple-shuffle",
        # With failover a retry should land on the next model only after the retries; under load
        # balancing a retry may move to another entry of the group.
        enable_weighted_failover=balance,
    )
    return EnvRouter(env=env, router=router, entry_group=groups[0], deployments=deployments)


def entry_cost(entry: ModelEntry | None, tokens_in: int, tokens_out: int) -> float | None:
    """The environment's price for a call, when the entry has one."""
    if entry is None or (entry.input_cost_per_token is None and entry.output_cost_per_token is None):
        return None
    return tokens_in * (entry.input_cost_per_token or 0.0) + tokens_out * (entry.output_cost_per_token or 0.0)
