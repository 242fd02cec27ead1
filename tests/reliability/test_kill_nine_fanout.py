"""The fan-out kill -9 harness in CI (:mod:`kill_nine_fanout`): a real ``ergon run`` of a
``foreach`` of :data:`ITEMS` items with ``task_runs: node`` and a window of 100, each item
appending its key to a ledger file outside the store, killed with SIGKILL (its process group) at
seeded moments while the items run, found ``crashed`` by ``ergon runs list`` and resumed with
``ergon runs resume`` (a two-kill case kills the resume too) until the run completes.

Each case must end ``completed``; each item must have one completed visit in the store and at
least one ledger line; an item the store had completed at a kill must have no ledger line after
it (it ran once); afterwards no visit is left running, no run is left without its process and
no Prefect flow run of the definition is left running. Items in flight or not yet committed at
the kill may run again (at-least-once for an unfinished checkpoint): counted, not refused.

The items pause up to :data:`SECONDS` around their ledger line, so that a kill finds some items
committed and some in flight. ``ERGON_KILL_FANOUT_CASES`` (default :data:`CASES`) and
``ERGON_KILL_FANOUT_FIRST`` pick the cases; a failure prints each case's number (its seed) and
what each kill found. ``benchmarks/kill_nine_fanout.py`` runs cases of 10,000 items.
"""

from __future__ import annotations

import os

import pytest

from kill_nine_fanout import Harness

pytestmark = pytest.mark.prefect

ITEMS = 300
SECONDS = 0.5
CASES = int(os.environ.get("ERGON_KILL_FANOUT_CASES", "2"))
FIRST = int(os.environ.get("ERGON_KILL_FANOUT_FIRST", "0"))


def test_a_fanout_killed_while_its_items_run_resumes_without_running_a_completed_item_again(
        prefect_api, store, definitions):
    env = {**os.environ, "ERGON_DATABASE_URL": store, "ERGON_DEFINITIONS": str(definitions)}
    harness = Harness(env, definitions, ITEMS, SECONDS)
    reports = []
    for case in range(FIRST, FIRST + CASES):
        reports.append(harness.run_case(case))
        print(reports[-1].describe())
    failures = "\n\n".join(r.describe() + "".join(f"\n  {p}" for p in r.problems) for r in reports if r.problems)
    assert not failures, failures
    assert all(r.kills for r in reports), "a case ended before its kill landed: " + \
        "; ".join(r.describe() for r in reports if not r.kills)
    # what makes the test bite: items the store had completed at a kill, each of which the
    # resume had to reuse rather than run again
    assert sum(len(k.completed) for r in reports for k in r.kills) > 0, \
        "no kill found an item completed: nothing was checked"
