"""What the soundness property test (test_soundness.py) saw, gathered across its examples and
printed at the end of the session by ``pytest_terminal_summary`` in this folder's conftest.py —
through pytest's terminal reporter, so the table is in CI's log whether or not ``-s`` is given.

Per definition: the runs (child runs of process nodes and workflow steps count under their own
definition), how they ended, and the routes covered: the distinct ``(source, target)`` moves of
its Plan's edges that some run took, against all of them.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field


@dataclass
class DefinitionCoverage:
    routes: set[tuple[str, str]] = field(default_factory=set)
    taken: set[tuple[str, str]] = field(default_factory=set)
    runs: int = 0
    ends: Counter = field(default_factory=Counter)


#: definition name → what its runs covered
COVERAGE: dict[str, DefinitionCoverage] = {}
#: seconds spent in the property test, per test id
SECONDS: dict[str, float] = {}


def definition(name: str, routes: set[tuple[str, str]]) -> DefinitionCoverage:
    entry = COVERAGE.setdefault(name, DefinitionCoverage())
    entry.routes |= routes
    return entry


class Timer:
    def __init__(self, test_id: str) -> None:
        self.test_id = test_id

    def __enter__(self) -> Timer:
        self.started = time.monotonic()
        return self

    def __exit__(self, *exc: object) -> None:
        SECONDS[self.test_id] = SECONDS.get(self.test_id, 0.0) + time.monotonic() - self.started


def lines() -> list[str]:
    """The coverage table (empty when the property test did not run)."""
    if not COVERAGE:
        return []
    width = max(len(n) for n in COVERAGE) + 2
    out = [f"{'definition':<{width}}{'runs':>5}  {'routes':>9}  how the runs ended", "-" * (width + 60)]
    total_runs = total_taken = total_routes = 0
    for name in sorted(COVERAGE):
        c = COVERAGE[name]
        taken = len(c.taken & c.routes)
        total_runs += c.runs
        total_taken += taken
        total_routes += len(c.routes)
        ends = ", ".join(f"{k} ×{v}" for k, v in sorted(c.ends.items(), key=lambda kv: (-kv[1], kv[0])))
        out.append(f"{name:<{width}}{c.runs:>5}  {taken:>4}/{len(c.routes):<4}  {ends}")
        missing = sorted(c.routes - c.taken)
        if missing:
            out.append(f"{'':<{width}}       not taken: " + ", ".join(f"{s}→{t}" for s, t in missing))
    out.append("-" * (width + 60))
    share = f" ({100 * total_taken / total_routes:.0f}%)" if total_routes else ""
    seconds = sum(SECONDS.values())
    out.append(f"{'all':<{width}}{total_runs:>5}  {total_taken:>4}/{total_routes:<4}{share}  in {seconds:.0f} s")
    return out
