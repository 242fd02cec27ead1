"""The data passed between the engine, the gateway and the agent loop (no litellm types leak out)."""

from __future__ import annotations

from flows.errors import ErgonError

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ToolCallRequest:
    """A tool call the model asked for."""

    id: str
    name: str
    arguments: dict[str, Any]


@dataclass
class LlmRequest:
    """One model call.

    ``model`` is a litellm model string (``openai/gpt-4o-mini``), an environment name, or None
    (``ERGON_MODEL``, else the offline model). ``response_schema`` asks for one JSON object
    valid against it. ``tools`` are OpenAI-style function tool definitions.
    """

    messages: list[dict[str, Any]]
    model: str | None = None
    tools: list[dict[str, Any]] | None = None
    response_schema: dict[str, Any] | None = None
    parameters: dict[str, Any] = field(default_factory=dict)
    # where the call is recorded
    run_id: str | None = None
    visit_id: str | None = None
    #: a call of a workstream (a delegated sub-agent): recorded with this id and no visit, never
    #: reused on resume (only visits' calls are)
    workstream_id: str | None = None
    attempt: int = 1
    repair: bool = False


@dataclass
class LlmResponse:
    """What came back, with its accounting."""

    content: str | None
    tool_calls: list[ToolCallRequest] = field(default_factory=list)
    model: str = ""
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    latency_ms: float = 0.0
    offline: bool = False
    cassette_key: str | None = None
    raw: dict[str, Any] | None = None


class LlmError(ErgonError):
    """A model call failed for good (after retries and failover)."""


class BudgetExceeded(LlmError):
    """A node's or run's token/cost budget would be exceeded."""


class InvalidOutput(LlmError):
    """The model's answer did not match the requested schema, even after repair."""


class AgentStuck(LlmError):
    """An agent's tool loop made no progress: the same call over and over, or no answer within its iterations."""
