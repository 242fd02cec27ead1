"""Dashboard benchmark: how long the Runs page over 100,000 runs and a run's page with 2,000
visits take, server-side (one script run) and in a real browser (until the page settles); aim:
each under 1 s, and switching the inspected node under 0.3 s.

The script seeds two SQLite stores — an empty one (the baseline: the same pages with nothing to
show) and a large one: 100,000 runs (bulk insert, spread over definitions, statuses and a year
of creation times) plus one run of a looping process with 2,000 visits (inputs, outputs, context
diffs, a tool call per visit). It then runs the dashboard with Streamlit's AppTest in this
process and times ``at.run()`` — the whole script run: boot, sidebar, the page's queries and
every element it sends — a warm-up first, then N repetitions; it prints the median and max of
each case, and the ratio to the baseline.

With ``--browser`` it also serves the dashboard over the large store the way ``ergon ui`` does
and drives Debian's chromium (Playwright) through it: each case loads a page in a fresh tab and
waits until it has *settled* — Streamlit's script has finished (the app's
``data-test-script-state`` is ``notRunning``), no element is still a skeleton waiting for its
code, and the case's own element is drawn (the runs table's rows, the run's graph) — which is
what a person waits for. The inspector case switches the
inspected node of the 2,000-visit run's page and waits for the other node's visits. Each case
has a warm-up load first.

With ``--first-load`` it measures only what a person meets first, over a store of ``--runs``
runs: each repetition starts the dashboard afresh (``ergon ui``'s command), opens the Runs page in
a new chromium once the health check answers — nothing warm on either side — then a run's page
from its link in the table, the same page by its address (which reloads the app) and the
sidebar's Task inbox, Definitions and Runs. Aims: the
first page settled under 1.5 s, each later page under 0.5 s. On 2026-12-07, on this 2-core
machine otherwise idle, over 10,000 runs, 9 starts (medians): first page 1.24 s (1.02-1.29 s)
against 1.72-1.79 s that morning, a run's page 0.65 s from its link in the table and 0.60 s by
its address, the sidebar's pages 0.13-0.29 s (``benchmarks/RESULTS.md``: the server's sockets
left Nagle's algorithm on, the preload tags never reached a browser, times in markdown loaded
the emoji plugin, and more).

Usage: ``python benchmarks/ui.py [--repeat N] [--runs 100000] [--visits 2000] [--browser | --first-load]``.
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


CHROMIUM = "/usr/bin/chromium"
#: The page has finished its script run (Streamlit marks the app root), no element of it is
#: still waiting for its code (Streamlit draws a skeleton in its place until then: a filter,
#: the table) and it shows ``marker``.
SETTLED = """(marker) => {
    const app = document.querySelector('[data-testid=stApp]');
    if (!app || app.getAttribute('data-test-script-state') !== 'notRunning') return false;
    if (document.querySelector('[data-testid=stStatusWidget] [data-testid=stStatusWidgetRunningIcon]')) return false;
    if (document.querySelector('[data-testid=stSkeleton], [data-testid=stAppSkeleton]')) return false;
    if (marker.css && !document.querySelector(marker.css)) return false;
    if (marker.text && !(document.querySelector('[data-testid=stMain]') || document.body).innerText.includes(marker.text)) return false;
    return true;
}"""


#: The page's own clock: when it saw the last click (in the capture phase, before any handler),
#: and when :data:`SETTLED_CLOCKED` first found it settled. A click through Playwright reaches
#: the page some 60-70 ms after ``click()`` is called (it waits for the element to be stable
#: and scrolls it into view first): the page's figure is what a person's click waits for.
CLICK_CLOCK = "document.addEventListener('click', () => { window.__clickAt = performance.now(); }, true);"
SETTLED_CLOCKED = ("(marker) => { const done = (" + SETTLED + ")(marker);"
                   " if (done) window.__settledAt = performance.now(); return done; }")


def serve(database_url: str, home: Path) -> tuple[object, str]:
    """The dashboard served as ``ergon ui`` serves it, over ``database_url``; (process, base URL)."""
    import socket
    import subprocess
    import urllib.request

    from flows.cli.ui import streamlit_command

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = open(home / "streamlit.log", "wb")  # noqa: SIM115 - closed with the process
    env = {**os.environ, "ERGON_DATABASE_URL": database_url,
           "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
    proc = subprocess.Popen(streamlit_command(port), env=env, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while True:
        try:
            with urllib.request.urlopen(f"{base}/_stcore/health", timeout=2) as resp:
                if resp.read() == b"ok":
                    return proc, base
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit((home / "streamlit.log").read_text())
        time.sleep(0.3)


def browser_cases(base: str, repeat: int, long_run: str, small_run: str, visits: int) -> list[tuple[str, list[float]]]:
    """Page-settle times in chromium (seconds), per case."""
    from playwright.sync_api import sync_playwright

    grid = RUNS_TABLE
    graph = {"css": "svg g.node"}
    cases: list[tuple[str, list[float]]] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=[
            "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
            "--disable-background-networking", "--disable-component-update", "--no-first-run"])
        context = browser.new_context(viewport={"width": 1280, "height": 900})

        def load(label: str, path: str, marker: dict) -> None:
            page = context.new_page()
            page.set_default_timeout(120_000)
            times = []
            for i in range(repeat + 1):  # the first load is the warm-up
                t0 = time.perf_counter()
                page.goto(base + path)
                page.wait_for_function(SETTLED, arg=marker, polling="raf")
                if i:
                    times.append(time.perf_counter() - t0)
            page.close()
            cases.append((label, times))

        load("runs page, the large store, page 1", "/", grid)
        load("run page, 2-visit run", f"/run?run={small_run}", graph)
        load(f"run page, {visits:,} visits", f"/run?run={long_run}", graph)

        page = context.new_page()
        page.set_default_timeout(120_000)
        page.goto(f"{base}/run?run={long_run}")
        page.wait_for_function(SETTLED, arg=graph, polling="raf")
        times = []
        for i in range(repeat + 1):
            # the newest visit of each node (tick has the odd sequence numbers, check the even ones)
            last_tick, last_check = (visits, visits - 1) if visits % 2 else (visits - 1, visits)
            node, marker = ("tick", f"#{last_tick} tick") if i % 2 == 0 else ("check", f"#{last_check} check")
            t0 = time.perf_counter()
            switch_node(page, node)
            page.wait_for_function(SETTLED, arg={"text": marker}, polling="raf")
            if i:
                times.append(time.perf_counter() - t0)
        cases.append((f"run page, {visits:,} visits, switch the inspected node", times))
        browser.close()
    return cases


#: The Runs page's table has drawn its rows (``ui/runs_table.py``: HTML rows, drawn by the
#: table's own code; until 2026-12-06 ``st.dataframe``, whose grid drew into a canvas).
RUNS_TABLE = {"css": ".ergon-runs tbody tr"}
#: The pages a person opens after the first one, in the sidebar's order: (link, what shows it is drawn).
#: Each marker is the page's own (the page before it is still on screen until the new one draws).
LATER_PAGES = (("Task inbox", {"text": "Task inbox"}), ("Definitions", {"css": "svg g.node", "text": "Definitions"}),
               ("Runs", {**RUNS_TABLE, "text": "run(s), newest first"}))


def first_loads(database_url: str, home: Path, repeat: int, run_id: str) -> list[tuple[str, list[float]]]:
    """``repeat`` times: start the dashboard as ``ergon ui`` does, wait until its health endpoint
    answers, start a new chromium and time the Runs page until it settles — nothing warm on
    either side — then the pages a person opens next in the same tab: a run's page (its link in
    the table, then its address loaded), and the sidebar's Task inbox, Definitions and Runs
    again. Also the time from the server's start to its first healthy answer, which the browser
    never sees but the person typing ``ergon ui`` waits for."""
    from playwright.sync_api import sync_playwright

    starts: list[float] = []
    firsts: list[float] = []
    later: dict[str, list[float]] = {}
    for _ in range(repeat):
        t0 = time.perf_counter()
        proc, base = serve(database_url, home)
        starts.append(time.perf_counter() - t0)
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=[
                    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                    "--disable-background-networking", "--disable-component-update", "--no-first-run"])
                page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
                page.set_default_timeout(120_000)
                page.add_init_script(CLICK_CLOCK)
                t0 = time.perf_counter()
                page.goto(base + "/")
                page.wait_for_function(SETTLED, arg=RUNS_TABLE, polling="raf")
                firsts.append(time.perf_counter() - t0)
                # the newest run is the one the table shows first: its link opens its page in the app
                t0 = time.perf_counter()
                page.locator(f".ergon-runs a[data-run='{run_id}']").click()
                page.wait_for_function(SETTLED_CLOCKED, arg={"css": "svg g.node"}, polling="raf")
                later.setdefault("a run's page (its link in the table)", []).append(time.perf_counter() - t0)
                later.setdefault("the same, by the page's clock from its click event", []).append(
                    page.evaluate("(window.__settledAt - window.__clickAt) / 1000"))
                t0 = time.perf_counter()
                page.goto(f"{base}/run?run={run_id}")
                page.wait_for_function(SETTLED, arg={"css": "svg g.node"}, polling="raf")
                later.setdefault("a run's page (its address loaded)", []).append(time.perf_counter() - t0)
                for link, marker in LATER_PAGES:
                    t0 = time.perf_counter()
                    page.get_by_test_id("stSidebarNavItems").get_by_role("link", name=link, exact=True).click()
                    page.wait_for_function(SETTLED, arg=marker, polling="raf")
                    later.setdefault(f"{link} (sidebar)", []).append(time.perf_counter() - t0)
                browser.close()
        finally:
            proc.terminate()  # type: ignore[attr-defined]
            proc.wait(timeout=30)  # type: ignore[attr-defined]
        print(f"start {starts[-1]:.2f} s, first page {firsts[-1]:.2f} s, then "
              + ", ".join(f"{t[-1]:.2f}" for t in later.values()) + " s", file=sys.stderr)
    return [("`ergon ui` start until its health check answers", starts),
            ("first page (Runs), cold browser, fresh server", firsts),
            *[(f"then {label}", times) for label, times in later.items()]]


def report(cases: list[tuple[str, list[float]]], aim: str) -> None:
    print("\n| in chromium, until the page settles | median ms | min ms | max ms |\n|---|---|---|---|")
    for label, times in cases:
        print(f"| {label} | {statistics.median(times) * 1000:.0f} | {min(times) * 1000:.0f} | {max(times) * 1000:.0f} |")
    print(aim)


def switch_node(page, node: str) -> None:
    """Inspect ``node`` the way a person does on the run page: click it in the graph (the graph
    takes clicks since the dashboard's redesign; before it, pick it in the inspector's list)."""
    clickable = page.locator("svg g.node[role=button]").filter(has=page.locator("title").get_by_text(node, exact=True))
    if clickable.count():
        clickable.click()
        return
    box = page.get_by_role("combobox", name="Inspect node")
    box.click()
    box.fill(node)
    box.press("Enter")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--visits", type=int, default=2_000)
    parser.add_argument("--browser", action="store_true", help="also measure page-settle times in chromium")
    parser.add_argument("--first-load", action="store_true",
                        help="only the first load of a freshly started dashboard in a cold browser, and the pages after it")
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

    if args.first_load:
        os.environ["ERGON_DATABASE_URL"] = big_url
        t0 = time.perf_counter()
        seed_runs(args.runs)
        small_run = seed_long_run(2)
        print(f"seeded {args.runs:,} runs in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
        # The seeded running and paused runs have no process: the first crash detection (what the
        # first `ergon` command or dashboard session does) would mark them crashed, once — over
        # ~600 such runs that took 101 s on 2026-12-06 (each run is settled on its own). They
        # are marked crashed here in one statement, so that every first load below finds the
        # store as it is from then on.
        import sqlalchemy as sa

        from flows.store.db import session
        from flows.store.models import Run

        with session(write=True) as s:
            s.exec(sa.update(Run.__table__).where(Run.__table__.c.status.in_(("running", "paused", "pending")))
                   .values(status="crashed"))
        report(first_loads(big_url, tmp, args.repeat, small_run),
               "aim: the first page under 1,500 ms after the server answers, each later page under 500 ms")
        return

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
    if not args.browser:
        return

    proc, base = serve(big_url, tmp)
    try:
        # the 2-visit run lives in the empty store: copy it into the big one's neighbourhood
        os.environ["ERGON_DATABASE_URL"] = big_url
        small_in_big = seed_long_run(2)
        settled = browser_cases(base, args.repeat, long_run, small_in_big, args.visits)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    print("\n| in chromium, until the page settles | median ms | max ms |\n|---|---|---|")
    for label, times in settled:
        print(f"| {label} | {statistics.median(times) * 1000:.0f} | {max(times) * 1000:.0f} |")
    print("aim: pages under 1,000 ms, switching the inspected node under 300 ms")


if __name__ == "__main__":
    main()
