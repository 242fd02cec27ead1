"""Runtime benchmarks: Ergon's engine on Prefect against plain Prefect, in one script.

Every comparison runs the Ergon workload and its hand-written Prefect baseline in the same
process, against the same Prefect server, alternating, best of N, each run starting on an idle
server (the previous run's event backlog drained, see ``benchmarks/settle.py``) — so the figures
are ratios, not absolute times of a busy machine. Each comparison also prints the Prefect server
CPU a run caused (from its start until the server is idle again), Ergon's against the baseline's.

* ``chain``   — a 200-node process of no-op tool nodes vs. a Prefect flow awaiting 200 no-op
                tasks in sequence (aim: ≤ 1.1×).
* ``foreach`` — a foreach over 1,000 no-op items, ``max_concurrency: 50`` (``--items``,
                ``--window``), vs. Prefect's
                ``task.map`` of 1,000 no-op tasks on a 50-thread task runner (aim: ≤ 1.1×).
                A third side runs in the same rounds for reference: Prefect's own async path,
                an async flow awaiting 1,000 async no-op tasks behind a semaphore of 50 — what
                Ergon's foreach does on Prefect (its items are async task runs on the flow's
                event loop), so Ergon's share of the difference is told apart from Prefect's.

Figures are medians of ``--repeat`` runs (default 5), and the median of the rounds' own ratios
with its bootstrap interval (``benchmarks/paired.py``: how sure the ratio is). Each comparison
also prints the CPU this process spent on each side and from it Ergon's own CPU per visit beyond
Prefect's task run
(aim ≤ 2 ms); ``--profile`` adds where that time goes (cProfile of one run, Ergon's functions by
cumulative time per visit).
* ``foreach-node`` — a foreach with ``task_runs: node`` over 10,000 no-op items, window 100
                (``--items``, ``--window``), vs. a Prefect flow with one task running the same
                items as a plain async loop behind a semaphore (aim: ≤ 2×); for reference, that
                loop without Prefect.
* ``concurrent`` — 50 runs at once on the SQLite store (5 processes × 10 runs): wall time,
                and the number of "database is locked" errors (aim: 0).

* ``phases``  — the chain's two sides cut at the flow body's start and end and the first and
                last visit: where the difference lies (medians; not run unless named).
* ``alone``   — the chain with every visit called directly instead of as a Prefect task run:
                Ergon's engine and store alone, per visit (not run unless named).

Usage: ``python benchmarks/runtime.py [chain|phases|alone|foreach|foreach-node|concurrent ...] [--repeat N] [--profile]``. Uses
``PREFECT_API_URL`` when set, otherwise starts a Prefect server under a temporary ERGON_HOME.
``--tags always`` runs every visit as a tagged Prefect task (Prefect's concurrency lease per task
run) instead of Ergon's default; ``--tags off`` without tags.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import statistics
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.home import prefect_for_benchmark  # noqa: E402
from benchmarks.paired import PairedRatio, paired_ratio  # noqa: E402
from benchmarks.settle import measured  # noqa: E402


def _setup_env() -> None:
    prefect_for_benchmark()


def chain_definition(n: int) -> str:
    lines = ["format_version: 1\nprocess: bench_chain\ninitial: n0\nnodes:"]
    for i in range(n):
        lines.append(f"  n{i}: {{type: tool, tool: noop, transitions: [{{to: {'n' + str(i + 1) if i + 1 < n else 'done'}}}]}}")
    lines.append("  done: {type: final}")
    return "\n".join(lines) + "\n"


def foreach_definition(concurrency: int, task_runs: str = "item") -> str:
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
            task_runs: {task_runs}
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
    """Median wall time and process CPU of each side, the Prefect server CPU of a median run, and
    Ergon's own CPU per visit beyond Prefect's task run (CPU of this process, Ergon's run less
    the baseline's, over the visits). The fastest run of each side is kept too: on a shared
    2-core VM a threaded run's wall and even its CPU swing by a third from run to run on both
    sides alike (py-spy puts it in Prefect's hand-offs to its event and log threads), and noise
    only ever adds time."""

    ergon: float
    base: float
    ergon_cpu: float
    base_cpu: float
    visits: int
    ergon_server_cpu: float | None
    base_server_cpu: float | None
    ergon_best: float
    base_best: float
    paired: PairedRatio
    profile: str = ""
    reference: Reference | None = None

    def line(self, label: str, base_label: str, aim: float = 1.1) -> str:
        per_visit = (self.ergon_cpu - self.base_cpu) / self.visits * 1000
        text = (f"{label:<30} ergon {self.ergon:7.2f}   {base_label} {self.base:7.2f}   "
                f"ratio {self.ergon / self.base:5.2f}  (aim <= {aim})\n"
                f"{'':<30} fastest runs: ergon {self.ergon_best:.2f}, baseline {self.base_best:.2f} "
                f"-> ratio {self.ergon_best / self.base_best:.2f}\n"
                f"{'':<30} {self.paired.describe(aim)}\n"
                f"{'':<30} CPU of this process: ergon {self.ergon_cpu:.2f} s, baseline {self.base_cpu:.2f} s "
                f"-> Ergon's own {per_visit:.2f} ms per visit beyond Prefect's task run (aim <= 2)")
        if self.ergon_server_cpu is not None and self.base_server_cpu is not None:
            text += (f"\n{'':<30} Prefect server CPU per run: ergon {self.ergon_server_cpu:.1f} s, "
                     f"baseline {self.base_server_cpu:.1f} s")
        if self.reference is not None:
            text += "\n" + self.reference.line(self)
        return text + (f"\n{self.profile}" if self.profile else "")


@dataclass
class Reference:
    """A third side run in the same rounds, for reference only (no aim): the median and fastest
    run, CPU, and the paired ratios of Ergon to it and of it to the baseline."""

    label: str
    wall: float
    cpu: float
    best: float
    ergon_to_it: PairedRatio
    it_to_base: PairedRatio

    def line(self, figures: Figures) -> str:
        per_visit = (figures.ergon_cpu - self.cpu) / figures.visits * 1000
        return (f"{'':<30} reference, {self.label}: {self.wall:.2f} s (fastest {self.best:.2f}), "
                f"CPU {self.cpu:.2f} s\n"
                f"{'':<32}it against the baseline: paired {self.it_to_base.median:.2f} "
                f"({self.it_to_base.low:.2f}-{self.it_to_base.high:.2f}), fastest {self.best / figures.base_best:.2f}\n"
                f"{'':<32}Ergon against it: paired {self.ergon_to_it.median:.2f} "
                f"({self.ergon_to_it.low:.2f}-{self.ergon_to_it.high:.2f}), fastest {figures.ergon_best / self.best:.2f}; "
                f"CPU {per_visit:.2f} ms per visit beyond it")


def _timed(fn) -> tuple[float, float | None, float]:
    """(wall, server CPU, this process's CPU) of one run on an idle server."""
    cpu: list[float] = []

    def run() -> None:
        started = time.process_time()
        fn()
        cpu.append(time.process_time() - started)

    wall, server = measured(run)
    return wall, server, cpu[0]


def _compare(repeat: int, ergon_run, baseline_run, visits: int, profile: bool = False,
             reference: tuple[str, Callable[[], None]] | None = None) -> Figures:
    """Alternate the sides, each on an idle server (see benchmarks/settle.py); medians of N.
    ``reference`` (a label and a run) is a third side timed in the same rounds, for reference."""
    ergon, base, ref = [], [], []
    for _ in range(repeat):
        base.append(_timed(baseline_run))
        ergon.append(_timed(ergon_run))
        if reference is not None:
            ref.append(_timed(reference[1]))
    sides = [("prefect", base), ("ergon", ergon)] + ([("ref", ref)] if reference is not None else [])
    for side, runs in sides:
        walls, cpus = (", ".join(f"{r[i]:.2f}" for r in runs) for i in (0, 2))
        print(f"  {side:<8} runs: {walls} s; CPU {cpus} s", flush=True)
    e, b = _median_run(ergon), _median_run(base)
    ergon_walls, base_walls = [r[0] for r in ergon], [r[0] for r in base]
    figures = Figures(e[0], b[0], statistics.median(r[2] for r in ergon), statistics.median(r[2] for r in base),
                      visits, e[1], b[1], min(ergon_walls), min(base_walls),
                      paired_ratio(ergon_walls, base_walls),
                      _profile(ergon_run, visits) if profile else "")
    if reference is not None:
        ref_walls = [r[0] for r in ref]
        figures.reference = Reference(reference[0], _median_run(ref)[0], statistics.median(r[2] for r in ref),
                                      min(ref_walls), paired_ratio(ergon_walls, ref_walls),
                                      paired_ratio(ref_walls, base_walls))
    return figures


def _median_run(runs: list[tuple[float, float | None, float]]) -> tuple[float, float | None, float]:
    return sorted(runs, key=lambda r: r[0])[len(runs) // 2]


#: frames of the orchestration around a visit (their time is mostly Prefect's task engine)
_WRAPPERS = ("flows/prefect/build.py", "flows/execution/body.py", "flows/prefect/executor.py:119",
             "flows/runtime/engine.py:159", "flows/runtime/engine.py:184", "flows/runtime/engine.py:342")


def _profile(ergon_run, visits: int, top: int = 10) -> str:
    """Where Ergon's own time per visit goes: cProfile of one run, Ergon's functions by their
    cumulative time (the orchestration wrappers left out), per visit."""
    import cProfile
    import pstats

    measured(lambda: None)  # an idle server first
    prof = cProfile.Profile()
    prof.enable()
    ergon_run()
    prof.disable()
    stats = pstats.Stats(prof).stats  # type: ignore[attr-defined]
    rows = []
    for (file, line, func), (_, calls, _, cum, _) in stats.items():
        where = file.replace(str(ROOT) + "/", "")
        if not where.startswith(("flows/", "compiler/")) or any(f"{where}:{line}".startswith(w) for w in _WRAPPERS):
            continue
        rows.append((cum, calls, f"{where}:{line}({func})"))
    rows.sort(reverse=True)
    lines = [f"{'':<30} profile (cProfile, one run; cumulative ms per visit, profiler overhead included):"]
    lines += [f"{'':<32}{cum / visits * 1000:7.3f} ms  {calls:>6} calls  {name}" for cum, calls, name in rows[:top]]
    return "\n".join(lines)


def _chain_baseline(n: int, marks: dict[str, float] | None = None,
                    spans: list[tuple[float, float]] | None = None):  # type: ignore[no-untyped-def]
    """The chain's baseline, a run of it per call: a Prefect flow awaiting ``n`` no-op tasks in
    sequence. ``marks`` gets the body's start and end, ``spans`` each task's (for ``phases``)."""
    from prefect import flow, task
    from prefect.cache_policies import NO_CACHE

    @task(cache_policy=NO_CACHE, persist_result=False)
    async def noop_task(i: int) -> dict:
        return {}

    @flow(name="baseline_chain", persist_result=False)
    async def baseline() -> None:
        if marks is not None:
            marks["body"] = time.perf_counter()
        for i in range(n):
            started = time.perf_counter()
            await noop_task.with_options(task_run_name=f"n{i}")(i)
            if spans is not None:
                spans.append((started, time.perf_counter()))
        if marks is not None:
            marks["body_end"] = time.perf_counter()

    return lambda: asyncio.run(baseline())


def bench_chain(repeat: int, n: int = 200, profile: bool = False) -> Figures:
    compiled = _compile(chain_definition(n), "bench_chain")
    return _compare(repeat, lambda: _run_ergon(compiled, {}), _chain_baseline(n), n, profile)


def _marked(run, marks: dict[str, float]) -> None:  # type: ignore[no-untyped-def]
    marks["start"] = time.perf_counter()
    run()
    marks["end"] = time.perf_counter()


def bench_chain_phases(repeat: int, n: int = 200) -> str:
    """Where the chain's difference lies: each side's run cut at the flow body's start, the first
    visit's start, the last visit's end and the body's end (Ergon's body and visits timed by
    wrapping ``flows.prefect.build.execute`` and ``Engine._visit`` in this process only).
    Medians of ``repeat`` alternating runs, each on an idle server."""
    import flows.prefect.build as build
    from flows.runtime.engine import Engine

    marks: dict[str, float] = {}
    spans: list[tuple[float, float]] = []
    visit, execute = Engine._visit, build.execute

    async def timed_visit(self, node):  # type: ignore[no-untyped-def]
        started = time.perf_counter()
        try:
            return await visit(self, node)
        finally:
            spans.append((started, time.perf_counter()))

    async def timed_execute(*args, **kwargs):  # type: ignore[no-untyped-def]
        marks["body"] = time.perf_counter()
        try:
            return await execute(*args, **kwargs)
        finally:
            marks["body_end"] = time.perf_counter()

    compiled = _compile(chain_definition(n), "bench_chain")
    sides = {"prefect": _chain_baseline(n, marks, spans), "ergon": lambda: _run_ergon(compiled, {})}
    phases: dict[str, list[dict[str, float]]] = {side: [] for side in sides}
    Engine._visit, build.execute = timed_visit, timed_execute  # type: ignore[method-assign]
    try:
        for _ in range(repeat):
            for side, run in sides.items():
                marks.clear()
                spans.clear()
                _timed(lambda run=run: _marked(run, marks))
                visits = sum(b - a for a, b in spans)
                phases[side].append({
                    "to the body": marks["body"] - marks["start"],
                    "body to 1st visit": spans[0][0] - marks["body"],
                    "visits": visits,
                    "between visits": spans[-1][1] - spans[0][0] - visits,
                    "last visit to body end": marks["body_end"] - spans[-1][1],
                    "body end to return": marks["end"] - marks["body_end"],
                    "total": marks["end"] - marks["start"],
                })
    finally:
        Engine._visit, build.execute = visit, execute  # type: ignore[method-assign]
    lines = [f"chain of {n}: where each side's run goes (seconds, median of {repeat})"]
    for name in phases["prefect"][0]:
        base = statistics.median(p[name] for p in phases["prefect"])
        ours = statistics.median(p[name] for p in phases["ergon"])
        lines.append(f"  {name:<24} prefect {base:7.3f}   ergon {ours:7.3f}   difference {ours - base:+7.3f}")
    return "\n".join(lines)


def bench_engine_alone(repeat: int, n: int = 200) -> str:
    """Ergon's own cost per visit with Prefect taken out: the chain's flow body
    (``flows.execution.body.execute``, the real engine and store) with every visit called directly
    instead of as a Prefect task run. Single-threaded and without a server, so it varies far less
    than the side-by-side runs; median of ``repeat`` runs after one warm-up."""
    import flows.tools.builtins  # noqa: F401  (registers `noop`)
    from compiler import workspace_from_texts
    from flows.catalog import Catalog
    from flows.execution.body import execute
    from flows.execution.request import RunRequest

    class Direct:
        async def visit(self, node, run_name, attempt_fn):  # type: ignore[no-untyped-def]
            return await attempt_fn(1)

    class NoPrefect:
        flow_run_id = None
        pauses = None

        async def executor(self) -> Direct:
            return Direct()

        async def run_subflow(self, *args):  # type: ignore[no-untyped-def]
            raise NotImplementedError("the chain has no sub-process")

        def cancel_requested(self) -> bool:
            return False

        def interruption(self) -> str | None:
            return None

    compiled = _compile(chain_definition(n), "bench_chain")
    catalog = Catalog(workspace_from_texts({}))

    def once() -> tuple[float, float]:
        wall, cpu = time.perf_counter(), time.process_time()
        result = asyncio.run(execute(compiled.plan, {}, RunRequest(catalog=catalog), NoPrefect()))  # type: ignore[arg-type]
        assert result.status == "completed", result
        return time.perf_counter() - wall, time.process_time() - cpu

    once()
    runs = [once() for _ in range(repeat)]
    wall = statistics.median(r[0] for r in runs) / n * 1000
    cpu = statistics.median(r[1] for r in runs) / n * 1000
    return (f"chain of {n} without Prefect (Ergon's engine and store alone, median of {repeat}): "
            f"{wall:.3f} ms wall, {cpu:.3f} ms CPU a visit")


def bench_foreach(repeat: int, n: int = 1000, concurrency: int = 50, profile: bool = False) -> Figures:
    from prefect import flow, task
    from prefect.cache_policies import NO_CACHE
    from prefect.context import SyncClientContext
    from prefect.task_runners import ThreadPoolTaskRunner

    @task(cache_policy=NO_CACHE, persist_result=False)
    def noop_task(i: int) -> dict:
        return {}

    @flow(name="baseline_map", persist_result=False, task_runner=ThreadPoolTaskRunner(max_workers=concurrency))
    def baseline() -> None:
        noop_task.map(range(n)).result()

    @task(cache_policy=NO_CACHE, persist_result=False)
    async def async_noop_task(i: int) -> dict:
        return {}

    @flow(name="reference_async", persist_result=False)
    async def async_flow() -> None:
        window = asyncio.Semaphore(concurrency)

        async def one(i: int) -> None:
            async with window:
                await async_noop_task(i)

        await asyncio.gather(*(one(i) for i in range(n)))

    def reference() -> None:
        # as Ergon runs its flows (flows.prefect.build.run_in_process): one sync client for the run
        with SyncClientContext.get_or_create():
            asyncio.run(async_flow())

    compiled = _compile(foreach_definition(concurrency), "bench_foreach")
    return _compare(repeat, lambda: _run_ergon(compiled, {"items": list(range(n))}), baseline, n, profile,
                    reference=("Prefect's async path (async tasks behind a semaphore)", reference))


def bench_foreach_node(repeat: int, n: int = 10_000, concurrency: int = 100, profile: bool = False) -> Figures:
    """A foreach with ``task_runs: node`` (one task run, its items on the event loop, each
    recorded) against the plain async loop a Prefect user would write for items that need no
    records: one flow given the items as its parameter, one task whose items are coroutines
    behind a semaphore. For reference, the same loop without Prefect at all."""
    from prefect import flow, task
    from prefect.cache_policies import NO_CACHE
    from prefect.context import SyncClientContext

    async def noop(i: int) -> dict:
        return {}

    async def loop(items: list[int]) -> None:
        window = asyncio.Semaphore(concurrency)

        async def one(i: int) -> None:
            async with window:
                await noop(i)

        await asyncio.gather(*(one(i) for i in items))

    @task(cache_policy=NO_CACHE, persist_result=False)
    async def every_item(items: list[int]) -> None:
        await loop(items)

    # the items are the flow's parameter, as the foreach's are its run's input
    @flow(name="baseline_loop", persist_result=False)
    async def baseline_flow(items: list[int]) -> None:
        await every_item(items)

    def baseline() -> None:
        with SyncClientContext.get_or_create():  # as Ergon runs its flows: one sync client for the run
            asyncio.run(baseline_flow(list(range(n))))

    compiled = _compile(foreach_definition(concurrency, "node"), "bench_foreach")
    # Ergon's own run processes (`ergon run`, a worker's flow-run process) freeze their start-up
    # heap (flows/heap.py), so that no full collection walks it again; this process does the
    # same for both sides, or a 10,000-item run pays a few 0.2 s walks of Prefect's modules
    gc.collect()
    gc.freeze()
    return _compare(repeat, lambda: _run_ergon(compiled, {"items": list(range(n))}), baseline, n, profile,
                    reference=("the same loop without Prefect", lambda: asyncio.run(loop(list(range(n))))))


CONCURRENT_WORKER = """
import asyncio, json, sys, time
sys.path.insert(0, {root!r})
from flows.prefect.config import configure_prefect_env
configure_prefect_env()
from benchmarks.runtime import _compile, chain_definition
from flows.prefect.build import call_flow
from flows.execution.request import RunRequest
from flows.store import runs as run_store
import flows.tools.builtins

compiled = _compile(chain_definition(10), "bench_chain")

async def one():
    run = run_store.create_run(compiled.plan.name, content=compiled.content, inputs={{}})
    await call_flow(compiled.plan, {{}}, RunRequest(run_id=run.id, trigger="api"))
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
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--items", type=int, help="foreach items (foreach: 1,000; foreach-node: 10,000)")
    parser.add_argument("--window", type=int, help="foreach max_concurrency (foreach: 50; foreach-node: 100)")
    parser.add_argument("--profile", action="store_true", help="also print where Ergon's time per visit goes")
    parser.add_argument("--tags", choices=["auto", "always", "off"], default="auto",
                        help="how visits are tagged in Prefect (ERGON_TASK_TAGS, see flows/tagging.py)")
    args = parser.parse_args()
    os.environ["ERGON_TASK_TAGS"] = args.tags
    _setup_env()
    print(f"runtime benchmarks, median of {args.repeat} (seconds; each run on an idle Prefect server)"
          f"; ERGON_TASK_TAGS={args.tags}")
    if "chain" in args.which:
        print(bench_chain(args.repeat, profile=args.profile).line("chain of 200 no-op nodes", "prefect"), flush=True)
    if "alone" in args.which:
        print(bench_engine_alone(max(args.repeat, 5)), flush=True)
    if "phases" in args.which:
        print(bench_chain_phases(args.repeat), flush=True)
    if "foreach" in args.which:
        n, window = args.items or 1000, args.window or 50
        print(bench_foreach(args.repeat, n, window, profile=args.profile)
              .line(f"foreach {n} items, window {window}", "prefect map"), flush=True)
    if "foreach-node" in args.which:
        n, window = args.items or 10_000, args.window or 100
        figures = bench_foreach_node(args.repeat, n, window, profile=args.profile)
        print(figures.line(f"foreach {n} items, task_runs: node, window {window}", "loop", aim=2.0), flush=True)
    if "concurrent" in args.which:
        elapsed, completed, locked, seen = bench_concurrent()
        print(f"50 concurrent runs (5 processes x 10) on SQLite: {elapsed:.1f} s, {completed}/50 completed, "
              f"{locked} 'database is locked' errors (aim: 0)")
        if completed < 50:
            print(f"  outcomes: {seen}")


if __name__ == "__main__":
    main()
