"""Schedule tick → first node's visit starting, under `ergon serve` (locally served).

A one-node definition with an interval trigger is served by a real `ergon serve` (Prefect's
runner, a subprocess per run) against a local Prefect server. For each scheduled run: the tick is
its Prefect ``expected_start_time``; the end is the ``started_at`` of its first visit in Ergon's
store. The runner prefetches due runs, so it can start the subprocess a little before the tick.

Baseline, measured in the same script: the same definition started with
:func:`flows.runs.start_detached` (what webhooks, on-complete chains and run-now use) — from the
call to the first visit starting. Both pay a fresh Python process importing Prefect and Ergon;
the ratio shows what the schedule path (runner poll, Prefect engine start, flow-run bookkeeping)
costs on top.

    python benchmarks/triggers.py [--ticks 5] [--every 10]

Run it on an otherwise idle machine; it prints medians and the ratio.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DEFINITION = """
kind: pipeline
name: bench_tick
context:
  schema: {{type: object, properties: {{done: {{type: string}}}}}}
triggers:
  - {{type: interval, every: {every}, as_user: bench}}
nodes:
  only: {{type: tool, config: {{context_update: {{done: "yes"}}}}, writes: [done]}}
"""


def _first_visit_start(run_id: str):
    from flows.store import visits as visit_store

    visits = visit_store.visits_for_run(run_id)
    return min((v.started_at for v in visits), default=None)


def _wait(predicate, timeout: float):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise TimeoutError("benchmark timed out")


def detached_latencies(n: int) -> list[float]:
    from flows.runs import start_detached
    from flows.store import runs as run_store
    from flows.store.models import utcnow

    out = []
    for _ in range(n):
        began = utcnow()
        run_id = start_detached("bench_tick", {}, started_by="bench", trigger="manual")
        _wait(lambda run_id=run_id: run_store.get_run(run_id).status in ("completed", "failed"), 120)
        out.append((_first_visit_start(run_id) - began).total_seconds())
    return out


def served_latencies(ticks: int, env: dict) -> list[float]:
    from prefect.client.orchestration import get_client

    from flows.store import runs as run_store

    log = Path(env["ERGON_HOME"]) / "serve.log"
    proc = subprocess.Popen([sys.executable, "-m", "flows.cli", "serve", "--webhook-port", "0"], env=env,
                            stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True)
    try:
        def scheduled_done():
            runs = [r for r in run_store.list_runs(definition="bench_tick", limit=500)[0]
                    if r.trigger == "schedule" and r.status == "completed"]
            return runs if len(runs) >= ticks + 1 else None

        runs = sorted(_wait(scheduled_done, 60 + 30 * ticks), key=lambda r: r.created_at)[1:ticks + 1]  # skip warm-up
        out = []
        with get_client(sync_client=True) as client:
            for run in runs:
                tick = client.read_flow_run(run.prefect_flow_run_id).expected_start_time
                out.append((_first_visit_start(run.id) - tick).total_seconds())
        return out
    finally:
        os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ticks", type=int, default=5)
    parser.add_argument("--every", type=int, default=10, help="interval of the schedule, seconds")
    args = parser.parse_args()
    os.environ.setdefault("ERGON_HOME", tempfile.mkdtemp(prefix="ergon-bench-"))
    folder = Path(tempfile.mkdtemp(prefix="ergon-bench-defs-"))
    (folder / "bench_tick.yaml").write_text(DEFINITION.format(every=args.every))
    os.environ["ERGON_DEFINITIONS"] = str(folder)
    from flows.prefect.config import configure_prefect_env

    configure_prefect_env()
    from flows.prefect.server import ensure_api_url
    from flows.store import db

    own_server = not os.environ.get("PREFECT_API_URL")
    ensure_api_url()
    db.init_db()
    try:
        baseline = detached_latencies(args.ticks)
        served = served_latencies(args.ticks, {**os.environ})
    finally:
        if own_server:  # the local server this script started under its temporary home
            from flows.prefect.server import stop

            stop()
    b, s = statistics.median(baseline), statistics.median(served)
    print(f"start_detached → first visit, {len(baseline)} runs: median {b:.2f} s (min {min(baseline):.2f}, max {max(baseline):.2f})")
    print(f"schedule tick → first visit under `ergon serve`, {len(served)} ticks every {args.every} s: "
          f"median {s:.2f} s (min {min(served):.2f}, max {max(served):.2f})")
    print(f"ratio served / detached: {s / b:.2f}   (served, in order: {', '.join(f'{x:.1f}' for x in served)})")


if __name__ == "__main__":
    main()
