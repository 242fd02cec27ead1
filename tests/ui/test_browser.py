"""The dashboard in a real browser: Debian's chromium driven by Playwright against `ergon ui`'s
own command line (never `playwright install`).

An approver signs in, opens the inbox, answers the task of a run waiting in a background
`ergon run`, and watches the run's page reach `completed` by itself; a failed run's page draws
the executed route in the SVG. Each page is saved under ``screenshots/`` (git-ignored).
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

import ui_seed as seed
from dashboard_server import dashboard, dashboard_store
from ui_defs import ALL

CHROMIUM = Path("/usr/bin/chromium")
if not CHROMIUM.exists():
    pytest.skip("the browser tests drive Debian's chromium at /usr/bin/chromium, which is not installed "
                "(apt-get install chromium; python3 dev.py test installs it)", allow_module_level=True)

from playwright.sync_api import expect, sync_playwright  # noqa: E402

pytestmark = [pytest.mark.browser, pytest.mark.prefect]
SCREENSHOTS = Path(__file__).resolve().parents[2] / "screenshots"  # git-ignored


@pytest.fixture(scope="module")
def env(prefect_api, migrated_template, tmp_path_factory):
    """A store and definitions folder shared by this module's tests and the dashboard server."""
    with dashboard_store(tmp_path_factory.mktemp("ui-browser"), migrated_template, ALL) as folder:
        yield folder


@pytest.fixture(scope="module")
def server(env):
    with dashboard(env) as url:
        yield url


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
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    pg = context.new_page()
    pg.set_default_timeout(30_000)
    expect.set_options(timeout=30_000)  # the first draw of a page loads the catalog and the graph renderer
    yield pg
    context.close()


def shot(page, name: str) -> None:
    SCREENSHOTS.mkdir(exist_ok=True)
    page.wait_for_timeout(500)  # let charts finish drawing (not an assertion)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)


def _wait(condition, what: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.3)


def nav(page, name: str):
    """The sidebar's link to a page (a page's own links may carry the same words, e.g. the run
    page's "Open in the task inbox")."""
    return page.get_by_test_id("stSidebarNavItems").get_by_role("link", name=name, exact=True)


def sign_in(page, name: str = "alice", password: str = "wonderland") -> None:
    """Sign in as a person does: the sidebar's link, the sign-in form, back to the same page."""
    before = page.url
    page.get_by_test_id("stSidebar").get_by_role("link", name="Sign in").click()
    page.get_by_label("Name").fill(name)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(before)
    expect(page.get_by_text(f"Signed in as {name}")).to_be_visible()


def test_approver_answers_in_the_inbox_and_the_run_completes(server, page):
    from flows.runs import start_detached
    from flows.store import runs as run_store
    from flows.store import tasks as task_store

    run_id = start_detached("review", {"party": "ACME"}, started_by="starter")
    _wait(lambda: run_store.run_status(run_id) == "paused" and task_store.tasks_for_run(run_id), "the run to wait for a person")
    task = task_store.tasks_for_run(run_id)[0]

    # A deep link as the first request of a fresh server still gets the whole app (ui/serve.py).
    page.goto(f"{server}/run?run={run_id}")
    expect(page.get_by_test_id("stMetricValue").first).to_contain_text("paused")
    expect(nav(page, "Task inbox")).to_be_visible()
    page.locator("svg g.node").first.wait_for()
    shot(page, "run-paused")

    nav(page, "Runs").click()
    expect(page.get_by_role("heading", name="Runs")).to_be_visible()
    page.locator(".ergon-runs tbody tr").first.wait_for()
    shot(page, "runs")

    sign_in(page)

    nav(page, "Task inbox").click()
    expect(page.get_by_role("heading", name="Review ACME")).to_be_visible()
    expect(page.get_by_text("Please decide about")).to_be_visible()
    page.get_by_role("button", name="Submit answer").click()
    expect(page.get_by_text("decision: required")).to_be_visible()  # refused inline, nothing sent
    assert task_store.get_task(task.id).status == "pending"
    shot(page, "inbox-refused")

    page.locator("[data-testid=stSelectbox]").filter(has_text="decision").click()
    page.get_by_role("option", name="approve").click()
    page.get_by_label("notes").fill("fine, from the browser")
    page.get_by_role("button", name="Submit answer").click()
    expect(page.get_by_text(f"Answered task {task.id}; the run resumes.")).to_be_visible()
    shot(page, "inbox")

    page.goto(f"{server}/run?run={run_id}")
    status = page.get_by_test_id("stMetricValue").first
    expect(status).to_contain_text("completed", timeout=90_000)  # the page refreshes itself
    expect(page.get_by_test_id("stMetricValue").nth(1)).to_contain_text("done")
    answered = task_store.get_task(task.id)
    assert answered.answered_by == "alice" and answered.answered_via == "dashboard"
    assert run_store.get_run(run_id).context["notes"] == "fine, from the browser"
    page.locator("svg g.node").first.wait_for()
    shot(page, "run")


def svg_node(page, node_id: str):
    """The node of the rendered graph whose title is ``node_id``."""
    return page.locator("svg g.node").filter(has=page.locator("title").get_by_text(node_id, exact=True))


def _graph(page) -> tuple[dict[str, str], dict[str, tuple[str, str]]]:
    """Node fill by node id, and edge (stroke, width) by "a->b", read from the rendered SVG."""
    return page.evaluate("""() => {
        const nodes = {}, edges = {};
        for (const g of document.querySelectorAll('svg g.node')) {
            const shape = g.querySelector('polygon, ellipse, path');
            nodes[g.querySelector('title').textContent] = shape ? shape.getAttribute('fill') : null;
        }
        for (const g of document.querySelectorAll('svg g.edge')) {
            const p = g.querySelector('path');
            edges[g.querySelector('title').textContent] = [p.getAttribute('stroke'), p.getAttribute('stroke-width')];
        }
        return [nodes, edges];
    }""")


def test_run_page_graph_shows_the_executed_route(server, page):
    from flows.runs import start_detached
    from flows.store import runs as run_store

    run_id = start_detached("boom", {}, started_by="starter")  # a real run, in the background
    _wait(lambda: run_store.run_status(run_id) == "failed", "the run to fail")
    seed.artifacts(run_id)

    page.goto(f"{server}/run?run={run_id}")
    expect(page.locator("svg g.node")).to_have_count(4)  # the start dot, first, explode, done
    nodes, edges = _graph(page)
    assert nodes["first"] == "#c8e6c9", "completed: green"
    assert nodes["explode"] == "#ffcdd2", "failed: red"
    assert nodes["done"] not in ("#c8e6c9", "#ffcdd2"), "never reached"
    assert edges["first->explode"] == ["#2e7d32", "2.5"], "the transition taken is drawn stronger"
    assert edges["explode->done"][0] == "#555555" and edges["explode->done"][1] in (None, "1")
    expect(page.get_by_text("item 3 is bad").first).to_be_visible()
    # the inspector opens on the failed tool: the arguments it received, and no broken JSON box
    expect(page.locator(".ergon-json").filter(has_text='"bad": 3').first).to_be_visible()
    expect(page.get_by_text("src property must be a valid json object")).to_have_count(0)
    shot(page, "run-failed")

    # the graph fits the page's width, and a click on a node inspects it
    svg = page.locator("svg:has(g.node)").first
    graph, main = svg.bounding_box(), page.get_by_test_id("stMain").bounding_box()
    assert graph["width"] <= main["width"] and graph["height"] < graph["width"], (graph, main)
    expect(page.get_by_text(re.compile(r"^#2 explode · failed"))).to_be_visible()
    svg_node(page, "first").click()
    expect(page.get_by_text(re.compile(r"^#1 first · completed"))).to_be_visible()
    expect(page.get_by_text(re.compile(r"^#2 explode · failed"))).to_have_count(0)
    svg_node(page, "explode").press("Enter")  # the nodes are keyboard-reachable too
    expect(page.get_by_text(re.compile(r"^#2 explode · failed"))).to_be_visible()

    nav(page, "Artifacts").click()
    expect(page.get_by_role("heading", name="Artifacts")).to_be_visible()
    page.get_by_label("Key contains").fill("report")
    page.get_by_label("Key contains").press("Enter")
    expect(page.get_by_text("All good.")).to_be_visible()
    shot(page, "artifacts")

    nav(page, "Definitions").click()
    expect(page.get_by_role("heading", name="Definitions")).to_be_visible()
    expect(page.locator("svg g.node").first).to_be_visible()
    shot(page, "definitions")


def _selected_rows(table) -> list[str]:
    """The ids of the runs the table shows as selected."""
    return table.evaluate("""t => [...t.querySelectorAll('tbody tr[aria-selected=true]')].map(r => r.dataset.run)""")


def test_runs_list_keeps_the_selected_run_when_a_new_run_arrives(server, page):
    from flows.store import runs as run_store

    made = [run_store.create_run("bulk", inputs={"i": i}, started_by="loader").id for i in range(3)]
    page.goto(server)
    caption = page.get_by_text(re.compile(r"of [\d,]+ run\(s\), newest first"))
    expect(caption).to_be_visible()
    total = int(re.search(r"of ([\d,]+) run", caption.inner_text()).group(1).replace(",", ""))
    table = page.locator(".ergon-runs")
    expect(table.locator("tbody tr").first).to_have_attribute("data-run", made[2])  # newest first
    table.locator(f"tbody tr[data-run='{made[1]}'] td").nth(1).click()  # a click on the row, not its link
    link = page.get_by_role("link", name=re.compile(r"^Open run "))
    expect(link).to_contain_text(made[1])
    assert _selected_rows(table) == [made[1]]

    run_store.create_run("bulk", inputs={"i": 3}, started_by="loader")  # arrives at the top
    expect(page.get_by_text(f"of {total + 1:,} run(s), newest first")).to_be_visible()  # Live re-drew the table
    expect(link).to_contain_text(made[1])
    # the selection moved down with its run
    _wait(lambda: _selected_rows(table) == [made[1]] and table.locator("tbody tr").nth(2).get_attribute("data-run") == made[1],
          "the selection on the picked run, a row lower", 30)
    table.locator(f"tbody tr[data-run='{made[1]}'] td").nth(1).click()  # a second click clears it
    expect(link).to_have_count(0)
    assert _selected_rows(table) == []


def test_runs_list_sorts_by_a_column_and_opens_a_run_in_one_click(server, page):
    from flows.store import runs as run_store

    made = [run_store.create_run("bulk", inputs={"i": i}, started_by=f"sorter{i}").id for i in range(3)]
    page.goto(server)
    table = page.locator(".ergon-runs")
    expect(table.locator("tbody tr").first).to_have_attribute("data-run", made[2])
    header = table.get_by_role("columnheader", name="started by")
    header.click()
    expect(header).to_have_attribute("aria-sort", "ascending")
    starters = table.locator("tbody tr td:nth-child(7)").all_inner_texts()
    assert starters == sorted(starters, key=str.lower), starters
    header.click()
    expect(header).to_have_attribute("aria-sort", "descending")
    starters = table.locator("tbody tr td:nth-child(7)").all_inner_texts()
    assert starters == sorted(starters, key=str.lower, reverse=True), starters
    header.click()
    expect(header).to_have_attribute("aria-sort", "none")  # back to newest first
    expect(table.locator("tbody tr").first).to_have_attribute("data-run", made[2])

    # the run column is a link to the run's page: one click opens it, in the same tab
    run_link = table.get_by_role("link", name=made[0][:8], exact=True)
    assert run_link.get_attribute("href") == f"run?run={made[0]}"
    run_link.click()
    page.wait_for_url(re.compile(rf"/run\?run={made[0]}$"))
    expect(page.get_by_test_id("stMetricValue").first).to_be_visible()
    expect(page.get_by_text(made[0]).first).to_be_visible()
    page.go_back()  # the browser's Back returns to the list
    expect(page.locator(".ergon-runs tbody tr").first).to_have_attribute("data-run", made[2])
    assert not re.search(r"/run\?", page.url), page.url


def _session_cookie(context) -> dict | None:
    return next((c for c in context.cookies() if c["name"] == "ergon_session"), None)


def test_sign_in_holds_across_reloads_tabs_and_deep_links_until_sign_out(server, page):
    from datetime import UTC, datetime, timedelta

    from ui import session

    run, task = seed.paused_review("Initech")
    deep = f"{server}/inbox?task={task.id}"
    page.goto(deep)
    expect(page.get_by_text("Sign in (in the sidebar) to see the tasks you can answer.")).to_be_visible()
    page.get_by_test_id("stSidebar").get_by_role("link", name="Sign in").click()
    page.get_by_label("Name").fill("alice")
    page.get_by_label("Password").fill("not her password")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("alert")).to_contain_text("Wrong name or password")
    assert _session_cookie(page.context) is None
    page.get_by_label("Password").fill("wonderland")
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(deep)  # back on the deep link it started from
    expect(page.get_by_role("heading", name="Review Initech")).to_be_visible()
    cookie = _session_cookie(page.context)
    assert cookie["httpOnly"] and cookie["sameSite"] == "Lax" and "wonderland" not in cookie["value"]
    assert page.evaluate("document.cookie").find("ergon_session") == -1, "page scripts cannot read it"

    page.reload()
    expect(page.get_by_text("Signed in as alice")).to_be_visible()
    expect(page.get_by_role("heading", name="Review Initech")).to_be_visible()
    tab = page.context.new_page()  # a new tab of the same browser, opened on a deep link
    tab.goto(deep)
    expect(tab.get_by_role("heading", name="Review Initech")).to_be_visible()
    expect(tab.get_by_text("Signed in as alice")).to_be_visible()
    tab.close()

    # Cancel asks first, on the run's page
    page.goto(f"{server}/run?run={run.id}")
    page.get_by_role("button", name="Cancel…").click()
    expect(page.get_by_text("Cancel this run?")).to_be_visible()
    page.get_by_role("button", name="No, keep it").click()
    expect(page.get_by_text("Cancel this run?")).to_have_count(0)
    assert run_status(run.id) == "paused", "asking is not cancelling"
    page.get_by_role("button", name="Cancel…").click()
    page.get_by_role("button", name="Yes, cancel the run").click()
    _wait(lambda: run_status(run.id) in ("cancelling", "cancelled"), "the cancel")

    page.get_by_test_id("stSidebar").get_by_role("button", name="Sign out").click()
    expect(page.get_by_test_id("stSidebar").get_by_role("link", name="Sign in")).to_be_visible()
    page.reload()
    expect(page.get_by_test_id("stSidebar").get_by_role("link", name="Sign in")).to_be_visible()
    assert _session_cookie(page.context) is None

    def refused(value: str) -> None:
        page.context.add_cookies([{"name": "ergon_session", "value": value, "url": server}])
        page.goto(deep)
        expect(page.get_by_text("Sign in (in the sidebar) to see the tasks you can answer.")).to_be_visible()

    refused(cookie["value"])  # the signed-out token: revoked
    live, _ = session.issue("alice")
    version, sign_in_id, expiry, signature = live.split(".")
    refused(f"{version}.{sign_in_id}.{int(expiry) + 86400 * 365}.{signature}")  # a longer expiry, same signature
    refused(f"{version}.{sign_in_id}.{expiry}.{signature[:-2]}AA")  # a forged signature
    expired, _ = session.issue("alice", now=datetime.now(UTC) - timedelta(days=2))
    refused(expired)
    page.context.add_cookies([{"name": "ergon_session", "value": live, "url": server}])
    page.goto(deep)
    expect(page.get_by_role("heading", name="Review Initech")).to_be_visible()  # the real one still works


def run_status(run_id: str) -> str:
    from flows.store import runs as run_store

    return run_store.run_status(run_id)


def test_inbox_rows_open_tasks_new_tasks_arrive_live_and_the_card_reads_as_text(server, page):
    from flows.store import tasks as task_store

    first_run, first = seed.paused_review("Hooli")
    page.goto(f"{server}/inbox")
    sign_in(page)
    card = page.locator(".st-key-task_card")
    expect(card.get_by_role("heading")).to_be_visible()
    expect(page.get_by_text("click a row to open it")).to_be_visible()

    # a second review arrives while the page is open (a run looping back after "request edits")
    second = task_store.create_task(first_run.id, "review", "Review Hooli again", assignee="group:legal",
                                    description="Second pass on **Hooli**.", fields=seed.FIELDS)
    grid = page.get_by_test_id("stDataFrame").first
    expect(grid).to_contain_text("Review Hooli again")  # no click, no reload: the list re-draws itself
    rows = grid.evaluate("g => [...g.querySelectorAll('[role=row]')].slice(1).map(r => r.innerText)")
    row = next(i for i, text in enumerate(rows) if second.id in text)
    box = grid.bounding_box()
    page.mouse.click(box["x"] + 200, box["y"] + 35 * (row + 1) + 17)  # a click anywhere on the row
    expect(card.get_by_role("heading", name="Review Hooli again")).to_be_visible()
    assert f"task={second.id}" in page.url, "the open task is in the address, to share or reload"
    expect(card).to_contain_text("Second pass on Hooli.")
    expect(card).to_contain_text("The other party")  # the field it is about, labelled from the schema…
    expect(card.get_by_test_id("stHorizontalBlock").get_by_text("Hooli", exact=True)).to_be_visible()  # …as text
    expect(card.locator(".ergon-json")).to_have_count(0)
    shot(page, "inbox-card")


def test_conversation_shows_prompts_as_sent_and_responses_as_json(server, page):
    run, _ = seed.paused_review("Pied Piper")
    page.goto(f"{server}/run?run={run.id}")
    svg_node(page, "prepare").click()
    prompt = page.get_by_test_id("stCode").filter(has_text="never skip a number")
    expect(prompt).to_be_visible()
    assert "You count.\n\nRules:\n- add one\n- never skip a number" in prompt.inner_text(), "line breaks kept"
    expect(page.get_by_role("listitem").filter(has_text="add one")).to_have_count(0)  # not turned into bullets
    response = page.get_by_test_id("stChatMessage").filter(has_text="response").locator(".ergon-json")
    expect(response).to_contain_text('"counter": 1')
    response.locator("summary").first.click()  # the tree's top level closes: it says what it holds
    expect(response.locator("details").first).not_to_have_attribute("open", "")
    assert response.locator("summary").first.evaluate("s => getComputedStyle(s, '::after').content") == '" 1 key }"'
    response.locator("summary").first.click()
    expect(response).to_contain_text('"counter": 1')
    expect(page.get_by_text(re.compile(r"LLM call 1 · offline · 12\+7 tokens · \$0\.0020 · 840 ms"))).to_be_visible()
    shot(page, "run-conversation")


def test_the_page_asks_for_its_elements_code_with_itself(server):
    """Every path of the dashboard serves Streamlit's page with the first page's element code
    preloaded and the server's address set (ui/preload.py), asked for as a browser asks (which
    Streamlit answers compressed); the files it names are served, and other responses are untouched."""
    import gzip
    import urllib.request

    from ui import preload

    for path in ("/", "/run?run=nothing", "/inbox"):
        request = urllib.request.Request(server + path, headers={"Accept-Encoding": "gzip, deflate, br"})
        with urllib.request.urlopen(request, timeout=30) as resp:
            raw = resp.read()
            assert int(resp.headers["Content-Length"]) == len(raw)
            html = (gzip.decompress(raw) if resp.headers.get("Content-Encoding") == "gzip" else raw).decode()
        assert html.count('rel="modulepreload"') > len(preload.files()), path
        assert html.index("BidiComponent.") < html.index("</head>")
        assert html.index("BACKEND_BASE_URL") < html.index("</head>"), path
    for name in preload.files()[:3]:
        with urllib.request.urlopen(f"{server}/{name}", timeout=30) as resp:
            assert resp.status == 200 and b"modulepreload" not in resp.read()
    with urllib.request.urlopen(f"{server}/_ergon/sign-in", timeout=30) as resp:
        assert b"modulepreload" not in resp.read(), "the sign-in form is ours: nothing is added to it"


def test_streamlit_files_come_from_memory_as_streamlit_serves_them(server):
    """Streamlit's own files are answered from memory (ui/static_files.py) with the bytes of the
    file and Streamlit's headers; anything else reaches Streamlit as before."""
    import urllib.error
    import urllib.request

    import streamlit

    folder = Path(streamlit.__file__).parent / "static"
    name = next(p.name for p in sorted((folder / "static" / "js").glob("index.*.js")))
    for path in (f"/static/js/{name}", "/static/css/" + next((folder / "static" / "css").glob("*.css")).name):
        with urllib.request.urlopen(urllib.request.Request(server + path, method="HEAD"), timeout=30) as resp:
            streamlits = resp.headers  # a HEAD is Streamlit's to answer
        with urllib.request.urlopen(server + path, timeout=30) as resp:
            assert resp.read() == (folder / path.lstrip("/")).read_bytes(), path
            for header in ("Content-Type", "Cache-Control"):
                assert resp.headers[header] == streamlits[header], (path, header)
            assert "immutable" in resp.headers["Cache-Control"]
    with urllib.request.urlopen(server + "/static/js/no-such-file.js", timeout=30) as resp:
        assert resp.headers["Content-Type"].startswith("text/html"), "Streamlit's own answer: its page"
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(server + "/static/js/%2e%2e%2findex.html", timeout=30)
    assert refused.value.code in (400, 404)


def test_a_page_opened_by_its_address_asks_the_server_where_it_is(server, page):
    """A page loaded by its address (a link in a notification, a reload) finds the server at once:
    Streamlit's JavaScript would first ask under the page's own path (``/inbox/_stcore/health``),
    get a 404 and retry after a delay (ui/preload.py)."""
    asked: list[str] = []
    page.on("request", lambda r: asked.append(r.url) if "/_stcore/" in r.url else None)
    page.goto(f"{server}/inbox")
    expect(page.get_by_role("heading", name="Task inbox")).to_be_visible()
    assert asked and all(url.startswith(f"{server}/_stcore/") for url in asked), asked
    assert page.evaluate("window.__streamlit.BACKEND_BASE_URL") == server + "/"


def test_pages_load_nothing_from_outside_this_server(server, page):
    """Every asset is shipped: the dashboard works offline and tells no outside host who looks."""
    outside: list[str] = []
    page.on("request", lambda r: outside.append(r.url)
            if not r.url.startswith((server, "data:", "blob:", "about:")) else None)
    run, task = seed.paused_review("Offline Inc")
    page.goto(f"{server}/_ergon/sign-in?next=/")
    expect(page.get_by_role("button", name="Sign in")).to_be_visible()
    page.goto(server)
    sign_in(page)
    for path, ready in (("/", ".ergon-runs tbody tr"), (f"/run?run={run.id}", "svg g.node"),
                        (f"/inbox?task={task.id}", ".st-key-task_card"), ("/submissions", "h1"), ("/artifacts", "h1"),
                        ("/definitions", "svg g.node"), ("/schedules", "h1")):
        page.goto(server + path)
        page.locator(ready).first.wait_for()
        page.wait_for_load_state("networkidle")
    assert outside == [], outside
