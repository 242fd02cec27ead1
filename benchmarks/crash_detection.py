"""Crash detection after a machine went down with many runs: how long the first ``ergon`` command
(or dashboard session) takes to mark them crashed and tell Prefect.

Each round seeds ``--runs`` runs recorded ``running`` by a process that is gone (a real pid that
exited), then times :func:`flows.runs.lifecycle.detect_crashed` twice over such a store:

* **store only** (the baseline) — the store's part of it alone: the runs are marked crashed
  and their tasks released (``mark_stale_runs_crashed`` and ``run_stopped(prefect=False)``);
* **with Prefect** — ``detect_crashed`` itself, a local Prefect server up: the same, and Prefect
  is asked for the flow runs the dead processes left open (their own, their subflows, those they
  had no time to record, by name) and each open one is set ``Crashed``.

The ratio is what telling Prefect adds. On 2026-12-07, on this 2-core machine while the
project's test suite ran beside it, 600 runs, medians of 3: the store's part 7.6 s, with Prefect
5.9 s (9.8 ms a run; each side's rounds 3.8–8.7 s) — telling Prefect now costs less than the
noise. Before Prefect was asked for all the runs at once (each run paid its own health check,
queries and clients) the same 600 runs took 207 s with Prefect, 346 ms a run.

Usage: ``python benchmarks/crash_detection.py [--runs 600] [--repeat 3]``.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.home import prefect_for_benchmark  # noqa: E402


def _dead_pid() -> int:
    """The pid of a process that has exited (and been reaped)."""
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True)
    return int(done.stdout)


def _seed(runs: int) -> None:
    from flows.store import runs as run_store

    pid = _dead_pid()
    for _ in range(runs):
        run = run_store.create_run("bench_crashed", started_by="bench")
        run_store.set_run_status(run.id, "running", pid=pid)


def _store_part() -> list:
    from flows.runs.answers import run_stopped
    from flows.settings import HEARTBEAT_TIMEOUT_SECONDS
    from flows.store import runs as run_store

    crashed = run_store.mark_stale_runs_crashed(heartbeat_timeout=HEARTBEAT_TIMEOUT_SECONDS)
    for run in crashed:
        run_stopped(run, prefect=False)
    return crashed


def _timed_detection(runs: int, *, prefect: bool) -> float:
    from flows.runs.lifecycle import detect_crashed

    _seed(runs)
    started = time.perf_counter()
    crashed = detect_crashed() if prefect else _store_part()
    elapsed = time.perf_counter() - started
    assert len(crashed) == runs, f"{len(crashed)} of {runs} runs marked crashed"
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=600)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    prefect_for_benchmark()
    store_only, with_prefect = [], []
    for _ in range(args.repeat):
        store_only.append(_timed_detection(args.runs, prefect=False))
        with_prefect.append(_timed_detection(args.runs, prefect=True))
    base, prefect = statistics.median(store_only), statistics.median(with_prefect)
    print(f"crash detection of {args.runs} runs, median of {args.repeat}")
    print(f"  store only   {base:7.2f} s   ({base / args.runs * 1000:.1f} ms a run; runs "
          f"{', '.join(f'{t:.2f}' for t in store_only)} s)")
    print(f"  with Prefect {prefect:7.2f} s   ({prefect / args.runs * 1000:.1f} ms a run; runs "
          f"{', '.join(f'{t:.2f}' for t in with_prefect)} s)   {prefect / base:.1f}× the store's part")


if __name__ == "__main__":
    main()
