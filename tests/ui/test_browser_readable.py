"""The run page as a new reader sees it at 1280 px, in a real browser (Debian's chromium driven
by Playwright against `ergon ui`'s own command line): every figure of the metric row readable in
full, a node waiting for a person called paused (waiting for a person) however the run waits,
and no developer's words — field names, ``None``, ids where a name exists — on the page."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path

import pytest
import yaml

import ui_seed as seed
from dashboard_server import dashboard, dashboard_store
from ui_defs import ALL, REVIEW, SUBMISSION_DEFS

CHROMIUM = Path("/usr/bin/chromium")
if not CHROMIUM.exists():
    pytest.skip("the browser tests drive Debian's chromium at /usr/bin/chromium, which is not installed "
                "(apt-get install chromium; python3 dev.py test installs it)", allow_module_level=True)

from playwright.sync_api import expect, sync_playwright  # noqa: E402

pytestmark = [pytest.mark.browser]

#: true when an element of the metric row shows less than its whole text (cut, with "…")
CLIPPED = """() => [...document.querySelectorAll('[data-testid=stMetricValue], [data-testid=stMetricValue] *')]
    .filter(e => e.scrollWidth > e.clientWidth + 1).map(e => e.textContent)"""


def waiting_in_process(party: str):
    """A `review` run waiting for a person the way a run started without a deployment waits: its
    process blocks in Prefect's pause, so the asking visit stays ``running`` while the run is
    ``paused`` and the task is open."""
    from flows.store import runs as run_store
    from flows.store import tasks as task_store
    from flows.store import visits as visit_store
    from flows.store.diff import context_diff

    run = run_store.create_run("review", content=yaml.safe_load(REVIEW), inputs={"party": party},
                               context={"party": party, "counter": 0}, started_by="starter")
    run_store.set_run_status(run.id, "running")
    before, after = {"party": party, "counter": 0}, {"party": party, "counter": 1}
    prepare = visit_store.start_visit(run.id, "prepare", "tool", input={"value": 0})
    visit_store.checkpoint_visit(prepare.id, run.id, output={"counter": 1}, context_diff=context_diff(before, after),
                                 context=after, next_node="review")
    asking = visit_store.start_visit(run.id, "review", "human_task", input={})
    task_store.create_task(run.id, "review", f"Review {party}", visit_id=asking.id, assignee="group:legal",
                           fields=seed.FIELDS)
    run_store.set_run_status(run.id, "paused")
    return run.id


def answered_after_three_hours() -> str:
    """A completed `review` run whose person answered three hours after being asked."""
    from flows.store import runs as run_store
    from flows.store import tasks as task_store
    from flows.store import visits as visit_store

    run, task = seed.paused_review("Initech")
    review = next(v for v in visit_store.visits_for_run(run.id) if v.node_id == "review")
    later = review.started_at + timedelta(hours=3, minutes=12)
    visit_store.finish_visit(review.id, "completed", next_node="done", now=later)
    task_store.answer_task(task.id, {"decision": "approve"}, answered_by="alice", answered_via="dashboard")
    done = visit_store.start_visit(run.id, "done", "final", now=later)
    visit_store.finish_visit(done.id, now=later + timedelta(milliseconds=3))
    run_store.set_run_status(run.id, "running")
    run_store.set_run_status(run.id, "completed", outcome="done", now=later + timedelta(milliseconds=3))
    return run.id


@pytest.fixture(scope="module")
def runs(migrated_template, tmp_path_factory):
    with dashboard_store(tmp_path_factory.mktemp("ui-readable"), migrated_template, {**ALL, **SUBMISSION_DEFS}) as folder:
        chain = seed.template_chain()
        seed.artifacts(chain.run_id)
        ids = {"template": chain.run_id, "input": chain.input_id, "long": answered_after_three_hours(),
               "waiting": waiting_in_process("ACME"), "suspended": seed.paused_review("Globex")[0].id}
        with dashboard(folder) as url:
            yield url, ids


@pytest.fixture(scope="module")
def browser():
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=[
            "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
            "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"])
        yield b
        b.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    pg = context.new_page()
    pg.set_default_timeout(30_000)
    expect.set_options(timeout=30_000)
    yield pg
    context.close()


def open_run(page, url: str, run_id: str) -> None:
    page.goto(f"{url}/run?run={run_id}")
    page.locator("svg g.node").first.wait_for()
    page.wait_for_function("() => document.querySelector('[data-testid=stApp]')"
                           "?.getAttribute('data-test-script-state') === 'notRunning'")


def test_the_metric_row_shows_each_value_in_full_at_1280_px(runs, page):
    url, ids = runs
    open_run(page, url, ids["template"])  # completed, its outcome a step's name
    values = page.get_by_test_id("stMetricValue")
    expect(values.first).to_have_text("completed")
    expect(values.nth(1)).to_have_text("write_digest")
    assert page.evaluate(CLIPPED) == []
    open_run(page, url, ids["long"])  # three hours and more
    expect(values.nth(2)).to_have_text("3 h 12 min")
    assert page.evaluate(CLIPPED) == []


@pytest.mark.parametrize("which", ["waiting", "suspended"])
def test_a_node_waiting_for_a_person_is_paused_in_the_node_picker(runs, page, which):
    """Both ways a run waits: its process blocked in the pause (the visit stays running) and
    suspended (the visit is marked paused)."""
    url, ids = runs
    open_run(page, url, ids[which])
    picker = page.get_by_role("combobox", name="Inspect node")
    expect(picker).to_have_value("review · human task · 1 visit(s) · paused (waiting for a person)")
    expect(page.get_by_test_id("stExpander").filter(has_text="#2 review")).to_contain_text(
        "paused (waiting for a person)")


def test_the_run_page_speaks_to_people_not_developers(runs, page):
    url, ids = runs
    open_run(page, url, ids["template"])  # its step write_digest has no description
    main = page.get_by_test_id("stMain")
    expect(main).to_contain_text("A step where a language model works with tools until it has its answer.")
    expect(main).to_contain_text("Input submission: contract_in")
    expect(main).to_contain_text("Output submission: contract_digest_out")
    text = main.inner_text()
    for raw in ("human_description", "None", "`", ids["input"]):
        assert raw not in text, f"{raw!r} on the run page"
    page.get_by_role("tab", name="Tasks").click()
    expect(main).to_contain_text("No tasks for people: this run has not reached a step that asks a person.")
    assert "human_task" not in main.inner_text()


def test_the_artifacts_page_names_the_run_an_artifact_came_from(runs, page):
    url, ids = runs
    page.goto(f"{url}/artifacts")
    main = page.get_by_test_id("stMain")
    expect(main.get_by_role("link", name="From a contract_digest run · completed")).to_be_visible()
    expect(page.get_by_role("combobox", name="Show")).to_have_value(re.compile(r"^trend v1 · from a contract_digest run of "))
    assert ids["template"] not in main.inner_text(), "the run's id where its name says more"
