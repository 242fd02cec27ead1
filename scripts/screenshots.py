"""Regenerate the dashboard's screenshots: every page at 1280 and 1600 px wide, into
``screenshots/`` (git-ignored), over a store of real runs.

It makes a throw-away ``ERGON_HOME`` with the dashboard tests' definitions and tools, starts
Prefect's local server there, runs real runs in the background (a failed run, a foreach run, a
review waiting for a person, a review answered after a long wait), records a template run's
submissions (each value citing the values it was taken from), serves the dashboard the way
``ergon ui`` does and drives Debian's chromium (Playwright) through each page, signed in as an
approver. Each page is saved as ``<page>-<width>.png``, full height (the window is made as tall as
the page, which scrolls inside Streamlit's main area rather than the document).

Usage: ``.venv/bin/python scripts/screenshots.py [--out screenshots]`` (``python3 dev.py screenshots``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "ui")]
CHROMIUM = "/usr/bin/chromium"
WIDTHS = (1280, 1600)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait(condition, what: str, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.3)


def seed() -> dict[str, str]:
    """Real runs through Prefect, plus a paused review with a conversation and artifacts."""
    import ui_seed
    from flows import people
    from flows.runs import start_detached
    from flows.store import runs as run_store
    from flows.store import tasks as task_store
    from flows.store import visits as visit_store

    people.add_user("alice", ["legal"], password="wonderland")
    failed = start_detached("boom", {}, started_by="starter")
    foreach = start_detached("doubler", {"numbers": [1, 2, 3, 4]}, started_by="starter")
    waiting = start_detached("review", {"party": "ACME"}, started_by="starter")
    for run_id in (failed, foreach):
        _wait(lambda r=run_id: run_store.run_status(r) in ("completed", "failed"), f"run {run_id}")
    _wait(lambda: run_store.run_status(waiting) == "paused" and task_store.tasks_for_run(waiting), "the review to wait")
    ui_seed.artifacts(failed)
    paused, _ = ui_seed.paused_review("Globex")  # a conversation to read
    # a review answered three hours after it was asked: the timeline's long wait
    long_run, task = ui_seed.paused_review("Initech")
    review = next(v for v in visit_store.visits_for_run(long_run.id) if v.node_id == "review")
    later = review.started_at + timedelta(hours=3)
    visit_store.finish_visit(review.id, "completed", next_node="done", now=later)
    task_store.answer_task(task.id, {"decision": "approve"}, answered_by="alice", answered_via="dashboard")
    done = visit_store.start_visit(long_run.id, "done", "final", now=later)
    visit_store.finish_visit(done.id, now=later + timedelta(milliseconds=3))
    run_store.set_run_status(long_run.id, "running")
    run_store.set_run_status(long_run.id, "completed", outcome="done", now=later + timedelta(milliseconds=3))
    chain = ui_seed.template_chain()  # a template run's submissions, each value citing its inputs
    return {"failed": failed, "foreach": foreach, "waiting": waiting, "paused": paused.id, "long": long_run.id,
            "task": task_store.tasks_for_run(waiting)[0].id, "digest": chain.digest_id,
            "headline": chain.versions["digest.headline"], "template": chain.run_id}


def run_store_status(run_id: str) -> str | None:
    from flows.store import runs as run_store

    return run_store.run_status(run_id)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "screenshots"))
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    home = Path(tempfile.mkdtemp(prefix="ergon-screens-"))
    defs = home / "definitions"
    shutil.copytree(ROOT / "tests" / "runtime" / "tools", defs / "tools", ignore=shutil.ignore_patterns("__pycache__"))
    from ui_defs import ALL, SUBMISSION_DEFS

    (defs / "forms").mkdir()
    for name, text in {**ALL, **SUBMISSION_DEFS}.items():
        (defs / name).write_text(text)
    os.environ.update({"ERGON_HOME": str(home), "ERGON_DEFINITIONS": str(defs), "LITELLM_OFFLINE_MODE": "true",
                       "ERGON_DATABASE_URL": f"sqlite:///{home / 'ergon.db'}"})
    for name in ("PREFECT_API_URL", "ERGON_UI_REQUIRE_LOGIN"):
        os.environ.pop(name, None)
    from flows.prefect import server as prefect_server
    from flows.store import db

    db.init_db()
    prefect_server.ensure_api_url()
    dashboard = None
    ids: dict[str, str] = {}
    try:
        ids = seed()
        from flows.cli.ui import streamlit_command

        port = _free_port()
        log = open(home / "streamlit.log", "wb")  # noqa: SIM115 - closed with the process
        dashboard = subprocess.Popen(streamlit_command(port), stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        base = f"http://127.0.0.1:{port}"

        def healthy() -> bool:
            try:
                with urllib.request.urlopen(f"{base}/_stcore/health", timeout=2) as resp:
                    return resp.read() == b"ok"
            except OSError:
                return False

        _wait(healthy, "the dashboard")
        shoot(base, ids, out)
    finally:
        if dashboard is not None:
            dashboard.terminate()
            dashboard.wait(timeout=30)
        if ids.get("waiting"):  # its `ergon run` process waits for an answer: end it, then its process
            from flows import runs

            runs.cancel(ids["waiting"], actor="screenshots")
            _wait(lambda: run_store_status(ids["waiting"]) == "cancelled", "the waiting run to end", timeout=60)
        prefect_server.stop()
        shutil.rmtree(home, ignore_errors=True)
    print(f"screenshots in {out}")


#: The height the page's content needs (Streamlit's main area scrolls on its own).
TALL = """() => Math.max(...[...document.querySelectorAll('[data-testid=stMain], [data-testid=stAppViewContainer]')]
    .map(e => e.scrollHeight), document.documentElement.scrollHeight)"""


def shoot(base: str, ids: dict[str, str], out: Path) -> None:
    from playwright.sync_api import expect, sync_playwright

    pages = [
        ("runs", "/", "[data-testid=stDataFrame] canvas"),
        ("run-failed", f"/run?run={ids['failed']}", "svg g.node"),
        ("run-foreach", f"/run?run={ids['foreach']}", "svg g.node"),
        ("run-paused", f"/run?run={ids['paused']}", "svg g.node"),
        ("run-waiting", f"/run?run={ids['waiting']}", "svg g.node"),  # its process blocked in the pause
        ("run-long-wait", f"/run?run={ids['long']}", "svg g.node"),
        ("inbox", f"/inbox?task={ids['task']}", ".st-key-task_card"),
        ("run-template", f"/run?run={ids['template']}", "svg g.node"),
        ("submissions", "/submissions", "[data-testid=stDataFrame] canvas"),
        ("submission-value", f"/submissions?submission={ids['digest']}&value={ids['headline']}", ".st-key-value_panel"),
        ("artifacts", "/artifacts", "[data-testid=stDataFrame] canvas"),
        ("definitions", "/definitions", "svg g.node"),
        ("schedules", "/schedules", "h1"),
    ]
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--headless=new", "--no-sandbox", "--disable-gpu",
                                                                     "--disable-dev-shm-usage", "--no-first-run"])
        for width in WIDTHS:
            context = browser.new_context(viewport={"width": width, "height": 900})
            page = context.new_page()
            page.set_default_timeout(60_000)
            page.goto(f"{base}/_ergon/sign-in?next=/")
            page.screenshot(path=str(out / f"sign-in-{width}.png"))
            page.get_by_label("Name").fill("alice")
            page.get_by_label("Password").fill("wonderland")
            page.get_by_role("button", name="Sign in").click()
            expect(page.get_by_text("Signed in as alice")).to_be_visible()
            for name, path, ready in pages:
                page.goto(base + path)
                page.locator(ready).first.wait_for()
                page.wait_for_function("() => document.querySelector('[data-testid=stApp]')"
                                       "?.getAttribute('data-test-script-state') === 'notRunning'")
                if name == "run-long-wait":
                    page.get_by_role("tab", name="Timeline").click()
                    page.wait_for_timeout(1500)  # the chart draws
                page.wait_for_timeout(800)  # charts and the graph finish drawing (not a measurement)
                # The page scrolls inside Streamlit's main area, not the document, so a full-page
                # screenshot would stop at the window: the window grows to the page's height.
                tall = page.evaluate(TALL)
                page.set_viewport_size({"width": width, "height": max(900, min(tall, 12_000))})
                page.wait_for_timeout(500)
                page.screenshot(path=str(out / f"{name}-{width}.png"), full_page=True)
                page.set_viewport_size({"width": width, "height": 900})
            context.close()
        browser.close()


if __name__ == "__main__":
    main()
