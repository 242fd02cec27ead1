"""Who is calling a tool: the run and visit a tool call belongs to (a context variable).

The engine sets it around every tool call (tool nodes and agent tool loops) so that built-in
tools that touch the store (artifacts, documents, ask_user) and the tool-call records know
their run without every tool signature carrying it.
"""

from __future__ import annotations

import contextvars
from dataclasses import dataclass


@dataclass(frozen=True)
class ToolContext:
    run_id: str | None = None
    visit_id: str | None = None
    node_id: str | None = None
    started_by: str | None = None


CURRENT: contextvars.ContextVar[ToolContext] = contextvars.ContextVar("ergon_tool_context", default=ToolContext())


def current() -> ToolContext:
    return CURRENT.get()
