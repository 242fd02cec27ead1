"""A fleet of Ergon on one machine at full size: throughput with one worker host, then two, with a
worker killed and the Prefect server restarted while runs are in flight, and what was lost or
repeated (the aim: nothing).

The fleet is the one of ``tests/cluster/test_fleet.py`` (``tests/cluster/fleet_helpers.py``): a
Prefect server on PostgreSQL, Ergon's store on PostgreSQL, worker hosts each running
``prefect worker start --pool fleet`` from a folder and ``ERGON_HOME`` of its own, ``ergon serve``
on a web host receiving signed webhooks, this script as the dashboard host. The definition: a
tool node, a ``foreach`` of three interaction model calls (one at a time) against a local
OpenAI-compatible server answering in ``--latency`` seconds, a human task (the run suspends; the
dashboard host answers it as soon as the run waits), a second tool node. The two tool nodes
append to the ledger of the worker host whose process ran them.

The same workload runs twice in one script, on one fleet: ``--runs`` webhook starts with **one**
worker host, then ``--runs`` more once a **second** worker host has joined (each worker
``--limit`` flow runs at once). In each pass, unless ``--no-kill`` / ``--no-restart``: the first
worker host seen running a run's ``foreach`` is killed with SIGKILL (its flow-run processes with
it) and started again, the Prefect server is stopped and started again on the same port and
database, ``ergon runs list`` finds the killed runs crashed and the dashboard's resume
(``flows.runs.resume_detached``) sends them back through the deployment.

Each pass prints: runs, the worker killed and the server's time away, wall time (first webhook →
last run completed), throughput (completed runs a minute), runs found crashed and resumed, tasks
answered, where the runs ran; then what the audit found (``fleet_helpers.audit``): runs lost (not
completed), completed nodes repeated (a ledger line twice without an interrupted visit), other
problems (a model call repeated outside a crashed run, a second task, a run that did not go
through the deployment or ran on the web host, a flow run left open in Prefect), and Ergon's
events in Prefect's event API that are missing. Last, the throughput ratio two workers / one.

Needs PostgreSQL: ``ERGON_TEST_POSTGRES_URL``, or run as root where Debian's postgresql package
is installed (a throwaway cluster is started, as ``python3 dev.py test`` does).

    python benchmarks/fleet.py [--runs 50] [--limit 4] [--latency 1.0] [--no-kill] [--no-restart] [--keep]
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "cluster"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50, help="webhook-started runs in each pass")
    parser.add_argument("--limit", type=int, default=4, help="flow runs a worker host runs at once")
    parser.add_argument("--latency", type=float, default=1.0, help="the model server's answer time, seconds")
    parser.add_argument("--timeout", type=float, default=1800, help="longest a pass may take, seconds")
    parser.add_argument("--no-kill", dest="kill", action="store_false", help="kill no worker")
    parser.add_argument("--no-restart", dest="restart", action="store_false", help="do not restart the Prefect server")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder (logs) and print it")
    args = parser.parse_args()
    # SIGTERM unwinds like Ctrl-C, so that the fleet's processes (own sessions) are stopped too
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    work = Path(tempfile.mkdtemp(prefix="ergon-bench-fleet-"))
    # this process's own Prefect client home: a developer's profile must not point it elsewhere
    (work / "dashboard" / "prefect-client").mkdir(parents=True)
    os.environ["PREFECT_HOME"] = str(work / "dashboard" / "prefect-client")
    os.environ.pop("PREFECT_API_URL", None)
    try:
        from fleet_helpers import postgres_server

        with postgres_server() as postgres:
            if not postgres:
                print("needs PostgreSQL: set ERGON_TEST_POSTGRES_URL=postgresql+psycopg://user@host:port/db, or run as "
                      "root with Debian's postgresql package installed")
                return 2
            return _bench(args, work, postgres)
    finally:
        if args.keep:
            print(f"logs kept in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


def _bench(args, work: Path, postgres: str) -> int:
    from flows.prefect.config import configure_prefect_env

    configure_prefect_env()
    from fleet_helpers import audit, drive, running_fleet, wait_for_events  # puts tests/llm on the path

    from fake_openai import FakeOpenAI

    fake = FakeOpenAI().start()
    fake.latency = args.latency
    cores = os.cpu_count() or 1
    print(f"fleet: {args.runs} webhook runs a pass (tool, foreach of 3 model calls at {args.latency:g} s, human task, "
          f"tool); worker hosts of --limit {args.limit}; Prefect server and store on PostgreSQL; {cores} cores; "
          f"{'a worker killed' if args.kill else 'no kill'}, {'a server restart' if args.restart else 'no restart'} "
          "in each pass", flush=True)
    passes = []
    failed = 0
    try:
        with running_fleet(work, postgres, fake, workers=1, worker_limit=args.limit) as fleet:
            for label, hosts in (("one", 1), ("two", 2)):
                while len(fleet.workers) < hosts:
                    fleet.add_worker(f"worker-{len(fleet.workers) + 1}")
                print(f"\n{label} worker host{'s' if hosts > 1 else ''}:", flush=True)
                before = _cpu_times()
                outcome = drive(fleet, args.runs, label=label, kill=args.kill, restart=args.restart,
                                timeout=args.timeout, progress=lambda line: print(f"  {line}", flush=True))
                busy = _busy(before, _cpu_times())
                print(f"  the machine's CPU during the pass: {busy:.0%} busy ({cores} cores)", flush=True)
                checked = audit(fleet, outcome)
                events, missing, excused = wait_for_events(outcome, timeout=30)
                passes.append((label, outcome))
                failed += len(checked.problems)
                _report(outcome, checked, events, missing, excused)
                time.sleep(2)  # the last flow-run processes exit before the next pass starts
    finally:
        fake.stop()
    (_, one), (_, two) = passes
    ratio = two.throughput / one.throughput if one.throughput else float("nan")
    print(f"\nthroughput: one worker host {one.throughput:.1f} runs/min, two {two.throughput:.1f} runs/min: "
          f"{ratio:.2f}× (wall {one.wall:.0f} and {two.wall:.0f} s for {args.runs} runs each, {cores} cores)")
    return 0 if failed == 0 else 1


def _cpu_times() -> tuple[int, int]:
    """(busy, total) clock ticks of every core since boot (``/proc/stat``)."""
    ticks = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = ticks[3] + ticks[4]  # idle + iowait
    return sum(ticks) - idle, sum(ticks)


def _busy(before: tuple[int, int], after: tuple[int, int]) -> float:
    return (after[0] - before[0]) / max(1, after[1] - before[1])


def _report(outcome, checked, events, missing, excused) -> None:
    ran = ", ".join(f"{host} {n}" for host, n in sorted(checked.ran_on.items()))
    ledger = ", ".join(f"{host} {n}" for host, n in sorted(checked.per_host.items()))
    working = [w for _task, _run, w in outcome.answered]
    print(f"  runs: {len(outcome.runs)} started, {len(outcome.runs) - len(outcome.unfinished)} completed; "
          f"wall {outcome.wall:.1f} s; throughput {outcome.throughput:.1f} runs/min")
    away = f"away {outcome.server_away:.1f} s" if outcome.server_away is not None else "none"
    print(f"  kills: {1 if outcome.killed else 0} ({outcome.killed or '-'}, {len(outcome.killed_runs)} runs in flight); "
          f"Prefect server restart: {away}; crashed and resumed through the deployment: "
          f"{len(outcome.crashed)} / {len(outcome.resumed)}; crash sweeps: {outcome.sweeps}")
    print(f"  tasks answered: {len(outcome.answered)} ({sum(1 for w in working if w)} while other runs were working)")
    print(f"  last process by worker host: {ran}; ledger lines by worker host: {ledger}")
    print(f"  lost: {len(checked.lost)}; repeated: {len(checked.repeated)}; other problems: "
          f"{len(checked.problems) - bool(checked.lost) - bool(checked.repeated)}")
    for problem in checked.problems[:10]:
        print(f"    problem: {problem}")
    print(f"  Ergon events in Prefect's event API: {len(events)}; missing or wrong: {len(missing)}; missing for "
          f"moments while the Prefect server was away or sent by a killed process: {len(excused)}")
    for line in (missing + excused)[:6]:
        print(f"    events: {line}")
    if outcome.stalled:
        from fleet_helpers import STALL_SECONDS

        print(f"  stopped waiting: nothing moved for {STALL_SECONDS:.0f} s")


if __name__ == "__main__":
    sys.exit(main())
