"""Stand-ins: what answers a tool call or an interaction instead of the real thing, for one test case.

``ergon test`` (:mod:`flows.testing`) lets a test file replace a tool's result, or a model's
structured answer to an interaction, for one case only. The two places that make those calls —
:func:`flows.tools.invoke.invoke` and :func:`flows.llm.interactions.run_interaction` — ask the
:data:`STAND_INS` of the current context before doing the real work. Outside a test case it is
None and nothing changes.

A context variable rather than a registry: every asyncio task and worker thread a run starts
copies the context it was created in, so the stand-ins of a case reach every node of that case
(fan-out items and sub-processes included) and no other case's.

This module imports nothing from the rest of Ergon, so that the tool and model layers can ask it
without depending on the test runner above them.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any, Protocol


class StandIns(Protocol):
    """The stand-ins of one test case; each call is counted, replaced or not."""

    def tool(self, name: str) -> tuple[bool, Any]:
        """A call of tool ``name`` is about to run: ``(True, result)`` when a stand-in answers it,
        ``(False, None)`` when the real tool runs. Raises the failure a stand-in gives."""
        ...

    def interaction(self, name: str) -> tuple[bool, Any]:
        """A call of interaction ``name`` is about to go to the model: ``(True, answer)`` when a
        stand-in gives the answer (still checked against the result schema as a model's is),
        ``(False, None)`` when the model answers. Raises the failure a stand-in gives."""
        ...


#: The stand-ins of the test case running in this context (None: no test case, nothing replaced).
STAND_INS: ContextVar[StandIns | None] = ContextVar("ergon_stand_ins", default=None)


class StandInFailure(Exception):
    """The failure a test file gives instead of a tool's or an interaction's result (``raises:``)."""
