"""kill -9 in the middle of a 10,000-item fan-out, then resume: no completed item runs again.

Not a test. Run ``python benchmarks/kill_nine_fanout.py`` (from the repository root, with the
project's virtualenv); ``--items N`` (default 10,000), ``--cases C`` (default 5) and ``--first K``
pick the size and the case numbers (each case's seed, which draws its one or two kill moments).
It makes a fresh Ergon home (SQLite store, logs) and starts a local Prefect server in it — or
uses the one ``PREFECT_API_URL`` names — and runs the cases of
``tests/reliability/kill_nine_fanout.py``: a ``foreach`` with ``task_runs: node``,
``max_concurrency: 100``, whose items each append their key to a ledger file, killed with
SIGKILL (its process group) once the ledger holds the drawn share of the items, then
``ergon runs list`` and ``ergon runs resume`` until the run completes. Prints per case: each
kill's moment (ledger lines, seconds after its process started), the items the store had
completed at it, the items that ran but were not completed then (which may run again), the
items that did run twice, and the time of the last resume from its start to the run's end;
then a run of the same definition without a kill, its time, with its ledger and the store's
completed items sampled every 20 ms: how far the store's completed items trail the items that
ran (what a kill at that moment would run again). Exits 1 when a case failed.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "reliability"))


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--cases", type=int, default=5)
    parser.add_argument("--first", type=int, default=0)
    parser.add_argument("--seconds", type=float, default=0.0,
                        help="each item pauses up to this long around its ledger line (default 0)")
    parser.add_argument("--no-baseline", action="store_true", help="skip the run without a kill")
    args = parser.parse_args()
    from benchmarks.home import harness_home

    home, stop_server = harness_home("ergon-kill-fanout-")
    from kill_nine_fanout import Harness

    workspace = home / "definitions"
    workspace.mkdir()
    harness = Harness({**os.environ, "ERGON_DEFINITIONS": str(workspace)}, workspace, args.items, args.seconds)
    print(f"kill -9 of a fan-out: {args.items:,} items, window 100, `task_runs: node`, item pause up to "
          f"{args.seconds} s; "
          f"cases {args.first}..{args.first + args.cases - 1} (seed = case number)", flush=True)
    reports = []
    started = time.monotonic()
    try:
        for case in range(args.first, args.first + args.cases):
            report = harness.run_case(case)
            reports.append(report)
            print(("FAIL " if report.problems else "ok   ") + report.describe()
                  + "".join(f"\n       {p}" for p in report.problems), flush=True)
        if not args.no_baseline:
            whole, behind, late = _watched(harness)
            print(f"no kill: the whole run {whole.first_seconds:.1f} s (spawn to exit); the store's completed "
                  f"items trailed the ledger by up to {behind:,} items, {late:.2f} s"
                  + "".join(f"\n       {p}" for p in whole.problems), flush=True)
    finally:
        stop_server()
    failed = [r for r in reports if r.problems]
    kills = [k for r in reports for k in r.kills]
    print(f"\ncases {len(reports)}, kills {len(kills)}, failed cases {len(failed)}; items repeated "
          f"{sum(r.repeated for r in reports)} in all (most in a case {max((r.repeated for r in reports), default=0)}); "
          f"items completed before a kill that ran again: "
          f"{sum(1 for r in reports for p in r.problems if 'ran again' in p)} cases")
    print(f"time {time.monotonic() - started:.0f} s (store, logs and ledgers: {home})")
    return 1 if failed else 0


def _watched(harness):
    """A run without a kill, its ledger and the store's completed items sampled every 20 ms:
    (its report, the most items the ledger was ahead of the store, the longest from a moment the
    ledger had some number of lines to the first moment the store had as many items completed —
    about the longest an item's end waited to be committed, within the 20 ms of a sample)."""
    import threading

    from kill_nine_fanout import _lines

    ledger = harness.workspace / "ledgers" / "case--1.txt"
    samples: list[tuple[float, int, int]] = []
    done = threading.Event()

    def watch() -> None:
        run_id = None
        while not done.is_set():
            at, lines = time.monotonic(), _lines(ledger)
            run_id = run_id or harness.run_of(ledger)
            if run_id is not None:
                samples.append((at, lines, len(harness.completed_items(run_id))))
            time.sleep(0.02)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        report = harness.run_case(-1, shares=[])
    finally:
        done.set()
        watcher.join()
    behind = max((lines - completed for _, lines, completed in samples), default=0)
    late = 0.0
    for written, level, _ in samples:  # the ledger had `level` lines: when did the store have as many completed?
        committed = next((t for t, _, completed in samples if completed >= level), None)
        if committed is not None:
            late = max(late, committed - written)
    return report, behind, late


if __name__ == "__main__":
    sys.exit(main())
