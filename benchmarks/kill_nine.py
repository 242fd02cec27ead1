"""The kill -9 harness at scale: many more seeded cases than CI runs, with the figures of the README.

Not a test. Run ``python benchmarks/kill_nine.py`` (from the repository root, with the project's
virtualenv); ``--cases N`` (default 100) and ``--first K`` pick the case numbers, so a run
continues where another stopped and a failure is re-run by its number (its seed). It makes a
fresh Ergon home (store, logs) and starts a local Prefect server in it — or uses the one
``PREFECT_API_URL`` names — and runs the cases of ``tests/reliability/kill_nine.py`` one after
another. Prints one line per case (what each kill found), the kills per event, the total time,
and the peak memory: of the largest ``ergon`` process the harness killed or watched (its VmHWM,
sampled while it lived) and of this process. Exits 1 when a case failed.
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
    parser.add_argument("--cases", type=int, default=100)
    parser.add_argument("--first", type=int, default=0)
    parser.add_argument("--quiet", action="store_true", help="print failing cases only")
    args = parser.parse_args()
    from benchmarks.home import harness_home

    home, stop_server = harness_home("ergon-kill-nine-")
    from kill_nine import Harness, _vm_hwm, run_cases

    workspace = home / "definitions"
    workspace.mkdir()
    harness = Harness({**os.environ, "ERGON_DEFINITIONS": str(workspace)}, workspace)
    started = time.monotonic()
    try:
        tally = run_cases(harness, args.first, args.cases,
                          echo=lambda line: None if args.quiet and line.startswith("ok") else print(line, flush=True))
    finally:
        stop_server()
    took = time.monotonic() - started
    kills = sum(len(r.kills) for r in tally.reports)
    print(f"\nkill -9: cases {args.first}..{args.first + args.cases - 1}")
    print("\n".join(tally.table()))
    print(f"cases {len(tally.reports)}, kills {kills}, failed cases {len(tally.failures)}")
    print(f"time {took:.0f} s ({took / max(1, len(tally.reports)):.1f} s a case, slowest "
          f"{max(r.seconds for r in tally.reports):.1f} s); peak memory of an ergon process "
          f"{max(r.peak_mb for r in tally.reports):.0f} MB, of this harness {_vm_hwm(os.getpid()):.0f} MB")
    print(f"(store, logs and ledgers: {home})")
    return 1 if tally.failures else 0


if __name__ == "__main__":
    sys.exit(main())
