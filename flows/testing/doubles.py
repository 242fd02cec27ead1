"""A case's ``mocks.tools`` and ``mocks.interactions``, as the :class:`~flows.stand_ins.StandIns` of its run.

Every call of a tool or an interaction during the case is counted by name, replaced or not (what
``expect.calls`` compares). A replaced one gets its results in order: a single result answers
every call; a list answers one call each and a call past its end fails the node, naming the
tool — a test that says "called twice" and sees a third call should not pass on a repeated
answer it never wrote.
"""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

from flows.stand_ins import StandInFailure
from flows.testing.spec import Mocks, Result


class CaseDoubles:
    """The stand-ins of one case, with the calls it saw."""

    def __init__(self, mocks: Mocks) -> None:
        self._tools = dict(mocks.tools)
        self._interactions = dict(mocks.interactions)
        self.calls: Counter[str] = Counter()
        # sync tools run in worker threads, fan-out items at once: count and pick under a lock
        self._lock = threading.Lock()

    def tool(self, name: str) -> tuple[bool, Any]:
        return self._take("tool", name, self._tools.get(name))

    def interaction(self, name: str) -> tuple[bool, Any]:
        return self._take("interaction", name, self._interactions.get(name))

    def _take(self, what: str, name: str, given: Result | list[Result] | None) -> tuple[bool, Any]:
        with self._lock:
            self.calls[name] += 1
            call = self.calls[name]
        if given is None:
            return False, None
        if isinstance(given, list):
            if call > len(given):
                raise StandInFailure(f"the test gives {len(given)} result(s) for {what} `{name}`, "
                                     f"and it was called a {_ordinal(call)} time")
            result = given[call - 1]
        else:
            result = given
        if result.fails:
            raise StandInFailure(result.raises or f"{what} `{name}` failed")
        return True, result.returns


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"
