"""Dashboard benchmark: server-side time of one script run of the Runs page over 100,000 runs
and of a run's page with 2,000 visits (aim: each under 1 s).

The script seeds two SQLite stores — an empty one (the baseline: the same pages with nothing to
show) and a large one: 100,000 runs (bulk insert, spread over definitions, statuses and a year
of creation times) plus one run of a looping process with 2,000 visits (inputs, outputs, context
diffs, a tool call per visit). It then runs the dashboard with Streamlit's AppTest in this
process and times ``at.run()`` — the whole script run: boot, sidebar, the page's queries and
every element it sends — a warm-up first, then N repetitions; it prints the median and max of
each case, and the ratio to the baseline.

Usage: ``python benchmarks/ui.py [--repeat N] [--runs 100000] [--visits 2000]``.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

LOOP = """
format_version: 1
process: bench_loop
initial: tick
context:
  schema:
    type: object
    properties: {counter: {type: integer}, limit: {type: integer}}
  initial: {counter: 0, limit: 1000}
nodes:
  tick:
    type: tool
    config: {context_update: {counter: 1}}
    writes: [counter]
    human_description: One step of the loop.
    transitions: [{to: check}]
  check:
    type: condition
    branches:
      - {when: {"<": [{var: counter}, {var: limit}]}, to: tick}
      - {default: true, to: done}
  done: {type: final}
"""
DEFINITIONS = ("contract_review", "kyc_check", "invoice_processing", "report_pipeline", "vendor_onboarding")
STATUSES = ("completed",) * 12 + ("failed", "failed", "running", "paused", "cancelled", "crashed")


def seed_runs(n: int) -> None:
    """``n`` runs in one transaction per 10,000 (a Core bulk insert: the seeding is not measured)."""
    import sqlalchemy as sa

    from flows.store.db import session
    from flows.store.models import Run, new_id

    rng = random.Random(6)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    for chunk in range(0, n, 10_000):
        rows = []
        for i in range(chunk, min(n, chunk + 10_000)):
            created = start + timedelta(seconds=i * 300 + rng.randint(0, 299))
            status = STATUSES[rng.randrange(len(STATUSES))]
            ended = created + timedelta(seconds=rng.randint(1, 600)) if status not in ("running", "paused") else None
            rows.append({
                "id": new_id(), "definition_name": DEFINITIONS[i % len(DEFINITIONS)], "definition_version": 1 + i % 3,
                "status": status, "outcome": "done" if status == "completed" else None, "trigger": "manual",
                "started_by": f"user{i % 37}", "created_at": created, "started_at": created, "ended_at": ended,
                "inputs": {"i": i}, "context": {"i": i, "notes": "x" * 200}, "cost_usd": 0.001 * (i % 50),
                "tokens": i % 5000,
            })
        with session(write=True) as s:
            s.exec(sa.insert(Run.__table__), params=rows)


def seed_long_run(visits: int) -> str:
    """A run of ``bench_loop`` with ``visits`` visits (tick/check alternating, then done)."""
    import yaml

    from flows.store import runs as run_store
    from flows.store import visits as visit_store
    from flows.store.diff import context_diff

    run = run_store.create_run("bench_loop", content=yaml.safe_load(LOOP), inputs={}, context={"counter": 0, "limit": 1000},
                               started_by="bench")
    run_store.set_run_status(run.id, "running")
    counter = 0
    for seq in range(1, visits + 1):
        node = "tick" if seq % 2 else "check"
        last = seq == visits
        old = {"counter": counter, "limit": 1000}
        if node == "tick":
            counter += 1
        new = {"counter": counter, "limit": 1000}
        v = visit_store.start_visit(run.id, node, "tool" if node == "tick" else "condition", input=old, sequence=seq)
        visit_store.checkpoint_visit(v.id, run.id, output={"counter": counter}, context_diff=context_diff(old, new),
                                     context=new, next_node=None if last else ("check" if node == "tick" else "tick"))
        if node == "tick":
            visit_store.record_tool_call(run.id, "increment", visit_id=v.id, args={"value": counter - 1},
                                         result={"counter": counter})
    run_store.set_run_status(run.id, "completed", outcome="done")
    return run.id


def timed(app: str, repeat: int, *, page: str | None = None, query: dict | None = None,
          session: dict | None = None) -> list[float]:
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(app, default_timeout=120)
    for key, value in (query or {}).items():
        at.query_params[key] = value
    for key, value in (session or {}).items():
        at.session_state[key] = value
    at.run()
    if page:
        at.switch_page(page)
    at.run()  # warm-up: imports, compiled plan cache, SQLite page cache
    assert not at.exception, [e.value for e in at.exception]
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        at.run()
        times.append(time.perf_counter() - t0)
        assert not at.exception, [e.value for e in at.exception]
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--visits", type=int, default=2_000)
    args = parser.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="ergon-bench-ui-"))
    (tmp / "definitions").mkdir()
    (tmp / "definitions" / "bench_loop.yaml").write_text(LOOP)
    os.environ.update({"ERGON_HOME": str(tmp), "ERGON_DEFINITIONS": str(tmp / "definitions"),
                       # the pages measured never reach Prefect; boot() only reads the variable
                       "PREFECT_API_URL": os.environ.get("PREFECT_API_URL", "http://127.0.0.1:9/api")})
    os.environ.pop("ERGON_UI_REQUIRE_LOGIN", None)
    from flows.store import db

    app = str(ROOT / "ui" / "app.py")
    empty_url, big_url = f"sqlite:///{tmp / 'empty.db'}", f"sqlite:///{tmp / 'big.db'}"
    db.init_db(empty_url)
    db.init_db(big_url)

    os.environ["ERGON_DATABASE_URL"] = empty_url
    t0 = time.perf_counter()
    small_run = seed_long_run(2)
    os.environ["ERGON_DATABASE_URL"] = big_url
    seed_runs(args.runs)
    long_run = seed_long_run(args.visits)
    print(f"seeded {args.runs:,} runs and a run with {args.visits:,} visits in {time.perf_counter() - t0:.1f} s",
          file=sys.stderr)

    cases = []

    def case(label: str, url: str, **kw) -> list[float]:
        os.environ["ERGON_DATABASE_URL"] = url
        times = timed(app, args.repeat, **kw)
        cases.append((label, times))
        return times

    base_runs = case("runs page, empty store (baseline)", empty_url)
    big_runs = case(f"runs page, {args.runs:,} runs, page 1", big_url)
    case(f"runs page, {args.runs:,} runs, status=failed", big_url, session={"runs_status": ["failed"]})
    case(f"runs page, {args.runs:,} runs, page 1000", big_url, session={"runs_page": 1000})
    case(f"runs page, {args.runs:,} runs, text search", big_url, session={"runs_text": "user3"})
    base_run = case("run page, 2 visits (baseline)", empty_url, page="pages/run.py", query={"run": small_run})
    big_run = case(f"run page, {args.visits:,} visits", big_url, page="pages/run.py", query={"run": long_run})

    print("\n| case | median ms | max ms |\n|---|---|---|")
    for label, times in cases:
        print(f"| {label} | {statistics.median(times) * 1000:.0f} | {max(times) * 1000:.0f} |")
    print(f"\nruns page: {statistics.median(big_runs) / statistics.median(base_runs):.2f}× the empty store")
    print(f"run page: {statistics.median(big_run) / statistics.median(base_run):.2f}× the 2-visit run")
    print("aim: each under 1,000 ms (server-side time per script run)")


if __name__ == "__main__":
    main()
