"""Runtime benchmarks: Ergon's engine on Prefect against plain Prefect, in one script.

Every comparison runs the Ergon workload and its hand-written Prefect baseline in the same
process, against the same Prefect server, alternating, best of N, each run starting on an idle
server (the previous run's event backlog drained, see ``benchmarks/settle.py``) — so the figures
are ratios, not absolute times of a busy machine. Each comparison also prints the Prefect server
CPU a run caused (from its start until the server is idle again), Ergon's against the baseline's.

* ``chain``   — a 200-node process of no-op tool nodes vs. a Prefect flow awaiting 200 no-op
                tasks in sequence (aim: ≤ 1.3×).
* ``foreach`` — a foreach over 1,000 no-op items, ``max_concurrency: 50``, vs. Prefect's
                ``task.map`` of 1,000 no-op tasks (aim: ≤ 1.3×).
* ``concurrent`` — 50 runs at once on the SQLite store (5 processes × 10 runs): wall time,
                and the number of "database is locked" errors (aim: 0).

Usage: ``python benchmarks/runtime.py [chain|foreach|concurrent ...] [--repeat N]``. Uses
``PREFECT_API_URL`` when set, otherwise starts a Prefect server under a temporary ERGON_HOME.
``--tags always`` runs every visit as a tagged Prefect task (Prefect's concurrency lease per task
run) instead of Ergon's default; ``--tags off`` without tags.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.settle import measured  # noqa: E402


def _setup_env() -> None:
    if "ERGON_HOME" not in os.environ:
        os.environ["ERGON_HOME"] = tempfile.mkdtemp(prefix="ergon-bench-")
    from flows.prefect.config import configure_prefect_env

    configure_prefect_env()
    from flows.prefect.server import ensure_api_url

    ensure_api_url()
    from flows.store import db

    db.init_db()


def chain_definition(n: int) -> str:
    lines = ["format_version: 1\nprocess: bench_chain\ninitial: n0\nnodes:"]
    for i in range(n):
        lines.append(f"  n{i}: {{type: tool, tool: noop, transitions: [{{to: {'n' + str(i + 1) if i + 1 < n else 'done'}}}]}}")
    lines.append("  done: {type: final}")
    return "\n".join(lines) + "\n"


def foreach_definition(concurrency: int) -> str:
    return textwrap.dedent(f"""
        format_version: 1
        process: bench_foreach
        initial: each
        context:
          schema: {{type: object, properties: {{items: {{type: array}}}}, required: [items]}}
        nodes:
          each:
            type: foreach
            foreach: items
            as: item
            max_concurrency: {concurrency}
            node: {{type: tool, tool: noop}}
            transitions: [{{to: done}}]
          done: {{type: final}}
        """)


def _compile(text: str, name: str):
    from compiler import workspace_from_texts
    from compiler.plan import build_plan
    from flows.catalog import Compiled

    ws = workspace_from_texts({f"{name}.yaml": text})
    from compiler.check import check_workspace

    report = check_workspace(ws)
    assert report.ok, [d.format() for d in report.errors]
    return Compiled(plan=build_plan(ws.units[0], ws), content=ws.units[0].data, unit=ws.units[0])


def _run_ergon(compiled, inputs: dict) -> None:
    import flows.tools.builtins  # noqa: F401
    from compiler import workspace_from_texts
    from flows import runs
    from flows.catalog import Catalog

    result = runs.start(compiled, inputs, catalog=Catalog(workspace_from_texts({})))
    assert result.status == "completed", result


@dataclass
class Figures:
    """Best wall time of each side, and the Prefect server CPU that side's best run caused."""

    ergon: float
    base: float
    ergon_server_cpu: float | None
    base_server_cpu: float | None

    def line(self, label: str, base_label: str) -> str:
        text = (f"{label:<30} ergon {self.ergon:7.2f}   {base_label} {self.base:7.2f}   "
                f"ratio {self.ergon / self.base:5.2f}  (aim <= 1.3)")
        if self.ergon_server_cpu is not None and self.base_server_cpu is not None:
            text += (f"\n{'':<30} Prefect server CPU per run: ergon {self.ergon_server_cpu:.1f} s, "
                     f"baseline {self.base_server_cpu:.1f} s")
        return text


def _compare(repeat: int, ergon_run, baseline_run) -> Figures:
    """Alternate the two sides, each on an idle server (see benchmarks/settle.py); best of N."""
    ergon, base = [], []
    for _ in range(repeat):
        base.append(measured(baseline_run))
        ergon.append(measured(ergon_run))
    best_ergon, best_base = min(ergon, key=lambda f: f[0]), min(base, key=lambda f: f[0])
    return Figures(best_ergon[0], best_base[0], best_ergon[1], best_base[1])


def bench_chain(repeat: int, n: int = 200) -> Figures:
    from prefect import flow, task
    from prefect.cache_policies import NO_CACHE

    @task(cache_policy=NO_CACHE, persist_result=False)
    async def noop_task(i: int) -> dict:
        return {}

    @flow(name="baseline_chain", persist_result=False)
    async def baseline() -> None:
        for i in range(n):
            await noop_task.with_options(task_run_name=f"n{i}")(i)

    compiled = _compile(chain_definition(n), "bench_chain")
    return _compare(repeat, lambda: _run_ergon(compiled, {}), lambda: asyncio.run(baseline()))


def bench_foreach(repeat: int, n: int = 1000, concurrency: int = 50) -> Figures:
    from prefect import flow, task
    from prefect.cache_policies import NO_CACHE
    from prefect.task_runners import ThreadPoolTaskRunner

    @task(cache_policy=NO_CACHE, persist_result=False)
    def noop_task(i: int) -> dict:
        return {}

    @flow(name="baseline_map", persist_result=False, task_runner=ThreadPoolTaskRunner(max_workers=concurrency))
    def baseline() -> None:
        noop_task.map(range(n)).result()

    compiled = _compile(foreach_definition(concurrency), "bench_foreach")
    return _compare(repeat, lambda: _run_ergon(compiled, {"items": list(range(n))}), baseline)


CONCURRENT_WORKER = """
import asyncio, json, sys, time
sys.path.insert(0, {root!r})
from flows.prefect.config import configure_prefect_env
configure_prefect_env()
from benchmarks.runtime import _compile, chain_definition
from flows.prefect.build import build_flow
from flows.runs.request import RunRequest
from flows.store import runs as run_store
import flows.tools.builtins

compiled = _compile(chain_definition(10), "bench_chain")

async def one():
    run = run_store.create_run(compiled.plan.name, content=compiled.content, inputs={{}})
    await build_flow(compiled.plan, RunRequest(run_id=run.id, trigger="api"))(return_state=True)
    return run_store.get_run(run.id).status

async def main():
    return await asyncio.gather(*(one() for _ in range({runs})), return_exceptions=True)

statuses = asyncio.run(main())
print(json.dumps([s if isinstance(s, str) else f"error: {{s}}" for s in statuses]))
"""


def bench_concurrent(processes: int = 5, runs_each: int = 10) -> tuple[float, int, int, dict]:
    import json

    script = CONCURRENT_WORKER.format(root=str(ROOT), runs=runs_each)
    env = {**os.environ}
    started = time.perf_counter()
    procs = [subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(processes)]
    outputs = [p.communicate(timeout=900) for p in procs]
    elapsed = time.perf_counter() - started
    completed = locked = 0
    seen: dict[str, int] = {}
    for out, err in outputs:
        locked += err.count("database is locked")
        statuses = json.loads(out.strip().splitlines()[-1]) if out.strip() else ["no output: " + err.strip()[-300:]]
        completed += sum(1 for s in statuses if s == "completed")
        locked += sum(1 for s in statuses if "database is locked" in s)
        for s in statuses:
            seen[s[:120]] = seen.get(s[:120], 0) + 1
    return elapsed, completed, locked, seen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("which", nargs="*", default=["chain", "foreach", "concurrent"])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--tags", choices=["auto", "always", "off"], default="auto",
                        help="how visits are tagged in Prefect (ERGON_TASK_TAGS, see flows/tagging.py)")
    args = parser.parse_args()
    os.environ["ERGON_TASK_TAGS"] = args.tags
    _setup_env()
    print(f"runtime benchmarks, best of {args.repeat} (seconds; each run on an idle Prefect server)"
          f"; ERGON_TASK_TAGS={args.tags}")
    if "chain" in args.which:
        print(bench_chain(args.repeat).line("chain of 200 no-op nodes", "prefect"), flush=True)
    if "foreach" in args.which:
        print(bench_foreach(args.repeat).line("foreach 1000 items, window 50", "prefect map"), flush=True)
    if "concurrent" in args.which:
        elapsed, completed, locked, seen = bench_concurrent()
        print(f"50 concurrent runs (5 processes x 10) on SQLite: {elapsed:.1f} s, {completed}/50 completed, "
              f"{locked} 'database is locked' errors (aim: 0)")
        if completed < 50:
            print(f"  outcomes: {seen}")


if __name__ == "__main__":
    main()
