"""Built-in tools every run has (the names the compiler lists in ``compiler.tools.BUILTIN_TOOLS``).

This module holds the deterministic helpers and imports the other built-in modules, so that
importing it registers every built-in: :mod:`~flows.tools.builtins_activities` (workflow-DSL
activities), :mod:`~flows.tools.builtins_embeddings` (the embedding activities and the agents'
semantic search), :mod:`~flows.tools.builtins_agent` (think, plan,
update_plan, artifacts), :mod:`~flows.tools.builtins_documents` (document store),
:mod:`~flows.tools.http` (http_request), :mod:`~flows.tools.builtins_human` (ask_user) and
:mod:`~flows.tools.builtins_workstreams` (the agents' workstream tools). ``set_context``
is not a tool function: the engine applies its ``updates`` envelope itself
(``flows.runtime.bodies``).
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from flows.tools import tool
from flows.tools.errors import ToolError

log = logging.getLogger("ergon.tools")


@tool(name="noop")
async def noop() -> dict:
    """Do nothing and return an empty result (useful in tests and benchmarks)."""
    return {}


@tool(name="log")
async def log_message(message: Any, level: str = "info") -> dict:
    """Log a message into the run's log: a string as it is, any other JSON value as JSON text.

    Args:
        message: the text to log (a number, list or mapping is logged as its JSON text)
        level: a logging level name (debug, info, warning, error); info when unknown
    """
    text = message if isinstance(message, str) else json.dumps(message, ensure_ascii=False, default=str)
    number = logging.getLevelName(level.upper())
    log.log(number if isinstance(number, int) else logging.INFO, text)
    return {"logged": text}


@tool(name="sleep")
async def sleep(duration: float | None = None, seconds: float | None = None) -> dict:
    """Wait a number of seconds (at most an hour).

    Args:
        duration: seconds to wait (the workflow DSL's parameter); default 1
        seconds: the same, under its older name (give one of the two)
    """
    if duration is not None and seconds is not None:
        raise ToolError("sleep", "give `duration` or `seconds`, not both")
    wait = duration if duration is not None else seconds if seconds is not None else 1.0
    await asyncio.sleep(max(0.0, min(float(wait), 3600.0)))
    return {"slept": wait}


# Registered on import (kept at the end: they import `tool` from the package, like this module).
from flows.tools import builtins_activities, builtins_agent, builtins_documents, builtins_embeddings, builtins_human, http  # noqa: E402,F401
from flows.tools import builtins_workstreams  # noqa: E402,F401
from flows.tools import builtins_email  # noqa: E402,F401
from flows.tools import builtins_catalog_artifacts  # noqa: E402,F401
from flows.tools import builtins_catalog_documents  # noqa: E402,F401
from flows.tools import builtins_catalog_conversations  # noqa: E402,F401
from flows.tools import skills  # noqa: E402,F401  (list_tools and the skills' learn_* tools)
