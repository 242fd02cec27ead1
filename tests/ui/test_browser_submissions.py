"""The Submissions page in a real browser (Debian's chromium driven by Playwright against `ergon ui`'s
own command line): a template run's digest opened from the list, one of its values followed back
through the step that wrote it and the step before to the contract's text it was taken from — each
step with its model call's prompt and answer — and a value of the input edited, once refused by the
form and once saved, with the store checked after each. Screenshots go to ``screenshots/``."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import ui_seed as seed
from dashboard_server import dashboard, dashboard_store
from ui_defs import ALL, SUBMISSION_DEFS

CHROMIUM = Path("/usr/bin/chromium")
if not CHROMIUM.exists():
    pytest.skip("the browser tests drive Debian's chromium at /usr/bin/chromium, which is not installed "
                "(apt-get install chromium; python3 dev.py test installs it)", allow_module_level=True)

from playwright.sync_api import expect, sync_playwright  # noqa: E402

pytestmark = [pytest.mark.browser]
SCREENSHOTS = Path(__file__).resolve().parents[2] / "screenshots"  # git-ignored


@pytest.fixture(scope="module")
def env(migrated_template, tmp_path_factory):
    """A store and a definitions folder (the template and its forms) shared with the dashboard."""
    with dashboard_store(tmp_path_factory.mktemp("ui-submissions"), migrated_template, {**ALL, **SUBMISSION_DEFS}) as folder:
        yield folder


@pytest.fixture(scope="module")
def server(env):
    with dashboard(env) as url:
        yield url


@pytest.fixture
def page(server):
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=[
            "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
            "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"])
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        pg = context.new_page()
        pg.set_default_timeout(30_000)
        expect.set_options(timeout=30_000)
        yield pg
        context.close()
        browser.close()


def shot(page, name: str) -> None:
    SCREENSHOTS.mkdir(exist_ok=True)
    page.wait_for_timeout(500)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)


def _at(page, **query: str) -> None:
    """Wait until the address shows ``query`` (the page puts what it shows in its query string)."""
    page.wait_for_url(lambda url: all(f"{k}={v}" in url for k, v in query.items()))


def test_a_value_is_followed_back_two_steps_to_the_input_and_a_value_is_edited(server, page):
    from flows.store import submissions as submission_store
    from flows.store.submissions import Cell

    chain = seed.template_chain()
    headline = chain.versions["digest.headline"]
    first_point = chain.versions["points[0].statement"]
    text = chain.versions["document.text"]

    # the list, newest first: the digest is the first row; a click on it opens it as its form
    page.goto(f"{server}/submissions")
    expect(page.get_by_role("heading", name="Submissions")).to_be_visible()
    grid = page.get_by_test_id("stDataFrame").first
    grid.locator("canvas").first.wait_for()
    box = grid.bounding_box()
    page.mouse.click(box["x"] + 18, box["y"] + 35 + 17)  # the first row's selection box
    expect(page.get_by_role("heading", name="contract_digest_out")).to_be_visible()
    _at(page, submission=chain.digest_id)  # the open submission is in the address, to share or reload
    expect(page.get_by_role("heading", name="Digest", exact=True)).to_be_visible()
    expect(page.get_by_text("llm_extract", exact=True).first).to_be_visible()
    shot(page, "submission")

    # a click on the headline: where it came from — the step that wrote it and its model call
    page.get_by_role("button", name="Drills for $900 a year, ends on 30 days' notice").first.click()
    panel = page.locator(".st-key-value_panel")
    expect(panel.get_by_text("This value", exact=True)).to_be_visible()
    _at(page, submission=chain.digest_id, value=headline)
    root = page.locator(f".st-key-hop_{headline}")
    expect(root.get_by_text("Made by a llm_extract transformation.")).to_be_visible()
    expect(root.get_by_role("link", name=re.compile(r"Step write_digest \(visit #2\) of run "))).to_be_visible()
    expect(root.get_by_test_id("stCode").filter(has_text="Write a one-line digest of these points")).to_be_visible()
    expect(root.get_by_test_id("stChatMessage").filter(has_text="response")).to_contain_text("refId")
    expect(panel.get_by_text("2 steps back", exact=True)).to_be_visible()  # the whole chain, down to the contract's text
    shot(page, "submission-provenance")

    # one hop back: the key point it was taken from, in its own submission, with the first step's call
    page.locator(f".st-key-hop_{first_point}").get_by_role("button", name=f"Open it in submission {chain.points_id}").click()
    _at(page, submission=chain.points_id, value=first_point)
    expect(page.get_by_role("heading", name="contract_points", exact=True)).to_be_visible()
    expect(panel.get_by_role("heading", name="Key points · entry 1 · Statement")).to_be_visible()
    point = page.locator(f".st-key-hop_{first_point}")
    expect(point.get_by_role("link", name=re.compile(r"Step extract_points \(visit #1\) of run "))).to_be_visible()
    expect(point.get_by_test_id("stCode").filter(has_text="List the key points of this contract")).to_be_visible()
    expect(panel.get_by_text("2 steps back", exact=True)).to_have_count(0)

    # two hops back: the contract's text in the run's input submission, which nothing computed
    page.locator(f".st-key-hop_{text}").get_by_role("button", name=f"Open it in submission {chain.input_id}").click()
    _at(page, submission=chain.input_id, value=text)
    expect(panel.get_by_role("heading", name="Document · Contract text")).to_be_visible()
    expect(panel.get_by_text("Nothing computed it: imported with the submission.")).to_be_visible()
    expect(panel.get_by_text("import", exact=True).first).to_be_visible()

    # editing needs a sign-in; a value the form refuses is not written, one it takes is
    expect(panel.get_by_text("Sign in (in the sidebar) to change this value.")).to_be_visible()
    before = page.url
    page.get_by_test_id("stSidebar").get_by_role("link", name="Sign in").click()
    page.get_by_label("Name").fill("alice")
    page.get_by_label("Password").fill("wonderland")
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(before)
    expect(page.get_by_text("Signed in as alice")).to_be_visible()
    page.get_by_role("button", name="120", exact=True).click()
    words = panel.get_by_role("textbox", name="Maximum words")
    expect(words).to_have_value("120")
    words.fill("many")
    panel.get_by_role("button", name="Save as a new version").click()
    expect(panel.get_by_text("Refused: the value does not fit the form, nothing was written.")).to_be_visible()
    expect(panel.get_by_text("preferences.max_words: 'many' is not of type 'integer'")).to_be_visible()
    cell = Cell("preferences", 0, "max_words")
    old = chain.versions["preferences.max_words"]
    assert [v.version_id for v in submission_store.history(chain.input_id)[cell]] == [old]

    panel.get_by_role("textbox", name="Maximum words").fill("150")
    panel.get_by_role("button", name="Save as a new version").click()
    expect(page.get_by_text("as a new version by alice")).to_be_visible()
    [first, second] = submission_store.history(chain.input_id)[cell]
    assert (first.version_id, first.value, first.source_type) == (old, 120, "import"), "the old version kept"
    assert (second.value, second.source_type, second.created_by) == (150, "manual", "alice")
    [selected] = [v for v in submission_store.selected_values(chain.input_id) if v.cell == cell]
    assert selected.version_id == second.version_id, "the new version is the selected one"
    _at(page, value=second.version_id)
    expect(panel.get_by_text("v2 · selected")).to_be_visible()
    expect(panel.get_by_text("manual", exact=True).first).to_be_visible()
    shot(page, "submission-edited")

    # the run's page links its input submission
    page.goto(f"{server}/run?run={chain.run_id}")
    page.get_by_role("link", name="Input submission: contract_in").click()
    expect(page.get_by_role("heading", name="contract_in", exact=True)).to_be_visible()
