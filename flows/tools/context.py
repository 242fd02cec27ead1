"""Who is calling a tool: the run and visit a tool call belongs to (a context variable).

The engine sets it around every tool call (tool nodes and agent tool loops) so that built-in
tools that touch the store (artifacts, documents) or ask a person (ask_user) and the tool-call records know
their run without every tool signature carrying it.
"""

from __future__ import annotations

import contextvars
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ToolContext:
    run_id: str | None = None
    visit_id: str | None = None
    node_id: str | None = None
    started_by: str | None = None
    #: False for tool *nodes*: their visit already records the input and output, so a tool-call
    #: row would store the same thing twice (and cost a write per node)
    record_calls: bool = True
    #: who the agents' `ask_user` tool assigns its questions to (the node's `ask_user:` setting)
    assignee: str | None = None
    #: how the agents' `ask_user` tool asks a person: ``ask(node_id=, title=, description=,
    #: assignee=, fields=)`` → (task, answer), set by the agent body (None outside an agent)
    ask: Any = None
    #: the run's interaction lookup (name → InteractionDef), set by the tool body (the
    #: `executeInteraction` activity runs a named interaction), and the run's environments, set by
    #: the tool and agent bodies (tools that call a model or an embedding model resolve names in
    #: them); None outside a run
    resolve_interaction: Any = None
    environments: Any = None
    #: the calling agent visit's workstreams (:class:`flows.runtime.workstreams.Workstreams`), which
    #: the workstream tools act on; None outside an agent that may delegate
    workstreams: Any = None
    #: set inside a workstream (a delegated sub-agent): its row id, which its tool calls are
    #: recorded with (instead of a visit), and the prefix its artifact keys get
    workstream_id: str | None = None
    artifact_prefix: str = ""


#: the default is shared, which is safe: ToolContext is frozen
CURRENT: contextvars.ContextVar[ToolContext] = contextvars.ContextVar(
    "ergon_tool_context", default=ToolContext())  # noqa: B039


def current() -> ToolContext:
    return CURRENT.get()
