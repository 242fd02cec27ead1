"""The kill -9 harness in CI (:mod:`kill_nine`): real ``ergon`` processes of a multi-node run with
side effects — a tool node, a foreach, a human task, a parallel branch — killed with SIGKILL at
seeded random moments (during start, during node execution, during the pause and right after its
answer), found by ``ergon runs list``, answered through ``ergon tasks answer`` and resumed with
``ergon runs resume`` until the run ends.

Each case must end ``completed`` with the context the definition makes; no visit completed
before a kill runs again (its ledger line, written outside the store, is there once; a node
killed mid-execution may run again: at-least-once for an unfinished node); one task is asked;
afterwards no run is ``pending``, ``running`` or ``paused`` without a live owner process, and no
Prefect flow run of the definition is left running or paused.

``ERGON_KILL_CASES`` (default :data:`CASES`) and ``ERGON_KILL_FIRST`` pick the cases; a failure
prints each case's number (its seed), its planned moments and what every kill found, so
``ERGON_KILL_FIRST=<n> ERGON_KILL_CASES=1`` re-runs it. ``benchmarks/kill_nine.py`` runs many more.
"""

from __future__ import annotations

import os

import pytest

from kill_nine import Harness, run_cases

pytestmark = pytest.mark.prefect

CASES = int(os.environ.get("ERGON_KILL_CASES", "8"))
FIRST = int(os.environ.get("ERGON_KILL_FIRST", "0"))


def test_runs_killed_at_random_moments_resume_without_repeating_completed_visits(prefect_api, store, definitions):
    env = {**os.environ, "ERGON_DATABASE_URL": store, "ERGON_DEFINITIONS": str(definitions)}
    tally = run_cases(Harness(env, definitions), FIRST, CASES, echo=print)
    print("\n".join(tally.table()))
    kills = sum(len(r.kills) for r in tally.reports)
    failures = "\n\n".join(r.describe() + "".join(f"\n  {p}" for p in r.problems + r.details)
                             for r in tally.failures)
    assert not tally.failures, f"{len(tally.failures)} of {CASES} cases failed:\n{failures}"
    assert kills >= CASES, f"only {kills} kills landed in {CASES} cases"
