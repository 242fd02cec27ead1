"""Schedule tick → first node's visit starting, through a Prefect process worker.

Deploys a one-node definition with an interval trigger to a fresh local Prefect server (SQLite),
starts a process worker, lets the schedule fire several times, and measures for each scheduled
run the time from its expected start (Prefect's ``expected_start_time``, the tick) to the
``started_at`` of its first visit in Ergon's store. The baseline, measured in the same script on
the same worker, is a plain Prefect flow with the same schedule: tick → its body starting. The
difference is what Ergon adds (its imports, compiling the definition, the store); the rest is
the worker's poll and the flow-run process start.

    python benchmarks/worker.py [--ticks 5] [--every 15]

Run it on an otherwise idle machine; it prints the medians and what Ergon adds (the difference:
the worker prefetches scheduled runs, so the baseline's body can start *before* its tick and a
ratio of the two would mean nothing).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DEFINITION = """
format_version: 1
process: bench_tick
initial: first
context:
  schema: {{type: object, properties: {{n: {{type: integer}}, counter: {{type: integer}}}}}}
  initial: {{n: 0}}
triggers:
  - {{type: interval, every: {every}}}
nodes:
  first: {{type: tool, tool: increment, input: {{value: "{{{{ n }}}}"}}, writes: [counter], transitions: [{{to: done}}]}}
  done: {{type: final}}
"""

#: The baseline flow: written to a file so the worker imports it like Ergon's entrypoint.
BASELINE = '''
from datetime import datetime, timezone
from pathlib import Path
from prefect import flow

@flow(name="bench-baseline")
def baseline(out: str) -> None:
    from prefect.runtime import flow_run
    with open(out, "a") as fh:
        fh.write(f"{flow_run.id} {datetime.now(timezone.utc).isoformat()}\\n")
'''

TOOLS = '''
from flows.tools import tool

@tool
def increment(value: int) -> dict:
    """Add one."""
    return {"counter": value + 1}
'''


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ticks", type=int, default=5, help="scheduled runs measured per side")
    parser.add_argument("--every", type=int, default=15, help="schedule interval, seconds")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="ergon-bench-worker-"))
    defs = work / "definitions"
    (defs / "tools").mkdir(parents=True)
    (defs / "bench_tick.yaml").write_text(DEFINITION.format(every=args.every))
    (defs / "tools" / "bench_tools.py").write_text(TOOLS)
    (work / "baseline_flow.py").write_text(BASELINE)
    os.environ.update({"ERGON_HOME": str(work / "home"), "ERGON_DEFINITIONS": str(defs)})
    os.environ.pop("PREFECT_API_URL", None)
    os.environ.pop("ERGON_DATABASE_URL", None)

    from flows.prefect import server
    from flows.prefect.config import configure_prefect_env

    configure_prefect_env()
    info = server.start(server._free_port(4400))
    os.environ["PREFECT_API_URL"] = info.url
    env = {**os.environ, "PREFECT_WORKER_QUERY_SECONDS": "1", "PREFECT_WORKER_PREFETCH_SECONDS": "10"}
    worker = None
    try:
        from flows.store import db

        db.init_db()
        done = subprocess.run([sys.executable, "-m", "flows.cli", "deploy", "bench_tick", "--work-pool", "bench",
                               "--prefect-file", str(work / "prefect.yaml")], cwd=ROOT, env=env,
                              capture_output=True, text=True)
        if done.returncode != 0:
            print(done.stdout + done.stderr)
            return 1
        baseline_out = work / "baseline.txt"
        _deploy_baseline(work, args.every, baseline_out)
        with open(work / "worker.log", "ab") as log:
            worker = subprocess.Popen([sys.executable, "-m", "prefect", "worker", "start", "--pool", "bench",
                                       "--limit", "4"], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                                      start_new_session=True)
        ergon, base = _collect(args.ticks, baseline_out)
    finally:
        if worker is not None:
            import signal

            for _ in range(2):
                os.killpg(worker.pid, signal.SIGINT)
                try:
                    worker.wait(timeout=10)
                    break
                except subprocess.TimeoutExpired:
                    pass
            if worker.poll() is None:
                os.killpg(worker.pid, signal.SIGKILL)
        server.stop()
        shutil.rmtree(work, ignore_errors=True)
    med_e, med_b = statistics.median(ergon), statistics.median(base)
    print(f"schedule tick → first visit starting, through a process worker ({args.ticks} ticks, every {args.every} s)")
    print(f"  Ergon   : median {med_e:.2f} s  (min {min(ergon):.2f}, max {max(ergon):.2f})")
    print(f"  baseline: median {med_b:.2f} s  (plain Prefect flow body starting; min {min(base):.2f}, max {max(base):.2f})")
    print(f"  Ergon adds: {med_e - med_b:+.2f} s (median − baseline median)")
    return 0


def _deploy_baseline(work: Path, every: int, out: Path) -> None:
    """The plain flow on the same pool and schedule (its code from ``work``)."""
    from datetime import timedelta

    from prefect.client.schemas.schedules import IntervalSchedule
    from prefect.flows import load_flow_from_entrypoint

    baseline = load_flow_from_entrypoint(f"{work / 'baseline_flow.py'}:baseline")
    baseline.from_source(str(work), "baseline_flow.py:baseline").deploy(
        "baseline", work_pool_name="bench", parameters={"out": str(out)}, print_next_steps=False,
        schedules=[IntervalSchedule(interval=timedelta(seconds=every))], build=False, push=False)


def _collect(ticks: int, baseline_out: Path) -> tuple[list[float], list[float]]:
    """Wait for ``ticks`` scheduled runs of each side; their tick → start delays in seconds."""
    from prefect.client.orchestration import get_client

    from flows.store import runs as run_store
    from flows.store import visits as visit_store

    deadline = time.monotonic() + 60 + ticks * 60
    ergon: dict[str, float] = {}
    base: dict[str, float] = {}
    with get_client(sync_client=True) as client:
        while time.monotonic() < deadline and (len(ergon) < ticks or len(base) < ticks):
            time.sleep(2)
            for run in run_store.list_runs(definition="bench_tick", limit=200)[0]:
                if run.prefect_flow_run_id in ergon or run.trigger != "schedule":
                    continue
                visits = visit_store.visits_for_run(run.id)
                if not visits:
                    continue
                tick = client.read_flow_run(run.prefect_flow_run_id).expected_start_time
                ergon[run.prefect_flow_run_id] = (_aware(visits[0].started_at) - tick).total_seconds()
            if baseline_out.exists():
                for line in baseline_out.read_text().splitlines():
                    fid, at = line.split()
                    if fid not in base:
                        tick = client.read_flow_run(fid).expected_start_time
                        base[fid] = (datetime.fromisoformat(at) - tick).total_seconds()
    if len(ergon) < ticks or len(base) < ticks:
        raise SystemExit(f"only {len(ergon)} Ergon and {len(base)} baseline scheduled runs arrived in time")
    return list(ergon.values())[:ticks], list(base.values())[:ticks]


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


if __name__ == "__main__":
    sys.exit(main())
