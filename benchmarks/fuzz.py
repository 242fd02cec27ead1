"""The reliability fuzzer at scale: many more seeded cases than CI runs, with counts per kind.

Not a test. Run ``python benchmarks/fuzz.py`` (from the repository root, with the project's
virtualenv); ``--cases N`` (default 10,000) and ``--first K`` pick the case numbers, so a run
continues where another stopped and a failure is re-run by its number. Prints, per mutation
kind, the cases run and failed; then the slowest case, total time and the process's peak memory
(the limits are those of ``tests/reliability/fuzzer.py``: 5 s a case, 500 MB). Exits 1 when a
case failed, printing the first few.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "reliability"))

from fuzzer import CASE_SECONDS, PEAK_MB, run_case, Tally  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=10_000)
    parser.add_argument("--first", type=int, default=0)
    args = parser.parse_args()
    tally = Tally()
    failed: Counter = Counter()
    for case in range(args.first, args.first + args.cases):
        before = len(tally.failures)
        run_case(case, tally)
        if len(tally.failures) > before:
            failed[tally.failures[-1].split("(")[1].split(" on ")[0]] += 1
    print(f"fuzz: cases {args.first}..{args.first + args.cases - 1}")
    print(f"{'kind':16} {'cases':>7} {'failed':>7}")
    for kind, count in sorted(tally.cases.items()):
        print(f"{kind:16} {count:7d} {failed[kind]:7d}")
    print(f"{'total':16} {sum(tally.cases.values()):7d} {len(tally.failures):7d}")
    print(f"time {tally.seconds:.1f} s, slowest case {tally.slowest:.2f} s (limit {CASE_SECONDS} s), "
          f"peak memory {tally.peak_mb:.0f} MB (limit {PEAK_MB} MB)")
    for failure in tally.failures[:5]:
        print("\n" + failure)
    return 1 if tally.failures or tally.peak_mb >= PEAK_MB else 0


if __name__ == "__main__":
    sys.exit(main())
