"""The reliability harness in CI: 1,000 seeded mutations of every definition and golden fixture,
each a report of well-formed diagnostics — no traceback, no case over 5 s, peak memory under
500 MB. The counts per mutation kind are printed (``-s`` or the captured output of a failure)."""

from __future__ import annotations

import os

from fuzzer import PEAK_MB, run_cases

CASES = int(os.environ.get("ERGON_FUZZ_CASES", "1000"))


def test_a_thousand_hostile_or_broken_definitions_each_get_diagnostics():
    tally = run_cases(0, CASES)
    print(f"\nfuzz: {sum(tally.cases.values())} cases in {tally.seconds:.1f} s, slowest {tally.slowest:.2f} s, "
          f"peak {tally.peak_mb:.0f} MB; per kind: " + ", ".join(f"{k} {n}" for k, n in sorted(tally.cases.items())))
    assert sum(tally.cases.values()) == CASES and len(tally.cases) >= 15, "every mutation kind ran"
    assert not tally.failures, f"{len(tally.failures)} failing case(s):\n" + "\n\n".join(tally.failures[:5])
    assert tally.peak_mb < PEAK_MB, f"peak memory {tally.peak_mb:.0f} MB"
