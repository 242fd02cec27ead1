"""Prefect's own resume form for a human task, in a real chromium on Prefect's UI: the approver
sees what they decide on (the task's description, the context fields it is about as a table, a
link to the task in Ergon's inbox), fields titled with their labels and marked when required —
and answering there resumes the run, recorded as answered through Prefect."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from test_pause_resume import finish, wait_for_task

CHROMIUM = Path("/usr/bin/chromium")
if not CHROMIUM.exists():
    pytest.skip("drives Debian's chromium at /usr/bin/chromium, which is not installed (apt-get install chromium)",
                allow_module_level=True)

from playwright.sync_api import expect, sync_playwright  # noqa: E402

pytestmark = [pytest.mark.browser, pytest.mark.prefect]
SCREENSHOTS = Path(__file__).resolve().parents[2] / "screenshots"  # git-ignored
DASHBOARD = "http://dashboard.test:8501"

VENDOR = """
format_version: 1
process: vendor_approval
initial: review
context:
  schema:
    type: object
    properties:
      vendor: {type: string}
      amount: {type: number}
      internal_ref: {type: string}
      decision: {type: string}
      approved_amount: {type: number}
      notes: {type: string}
    required: [vendor]
  initial: {amount: 1200, internal_ref: "x-7"}
nodes:
  review:
    type: human_task
    task:
      title: "Approve {{ vendor }}"
      description: "**{{ vendor }}** asks to be paid {{ amount }} EUR | upfront."
      fields:
        - {name: decision, type: select, required: true, label: Decision, options: [approve, reject]}
        - {name: approved_amount, type: number, required: true, label: Approved amount, description: In EUR}
        - {name: notes, type: text, label: Notes}
    writes: [decision, approved_amount, notes]
    transitions:
      - {to: done, guard: {"==": [{var: decision}, approve]}}
      - {to: rejected}
  done: {type: final}
  rejected: {type: final}
"""


def _paused(flow_run_id: str, timeout: float = 60):
    from prefect.client.orchestration import get_client

    deadline = time.monotonic() + timeout
    while True:
        with get_client(sync_client=True) as client:
            run = client.read_flow_run(flow_run_id)
        keyset = run.state.state_details.run_input_keyset if run.state else None
        if run.state and run.state.type.value == "PAUSED" and keyset:
            return keyset
        assert time.monotonic() < deadline, "the run never paused in Prefect"
        time.sleep(0.2)


def _stored(keyset: dict, flow_run_id: str, which: str):
    from prefect.input.actions import read_flow_run_input

    deadline = time.monotonic() + 30
    while (value := read_flow_run_input(keyset[which], flow_run_id=flow_run_id)) is None:
        assert time.monotonic() < deadline, f"no {which} stored for the pause"
        time.sleep(0.2)
    return value


def test_prefects_resume_form_shows_the_task_and_answers_it(env, definitions):
    import os
    import subprocess
    import sys

    from flows.store import runs as run_store
    from flows.store import tasks as task_store

    (definitions / "vendor_approval.yaml").write_text(VENDOR)
    run_env = {**env, "ERGON_UI_URL": DASHBOARD}
    proc = subprocess.Popen([sys.executable, "-m", "flows.cli", "run", "vendor_approval", "--input", "vendor=ACME",
                             "--json"], env=run_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        task = wait_for_task("vendor_approval")
        flow_run_id = run_store.get_run(task.run_id).prefect_flow_run_id
        keyset = _paused(flow_run_id)

        # what Prefect stores for the pause: the schema its form is drawn from, and the text above it
        schema = _stored(keyset, flow_run_id, "schema")
        props = schema["properties"]
        assert props["decision"]["title"] == "Decision (required)" and props["decision"]["enum"] == ["approve", "reject"]
        assert props["approved_amount"]["title"] == "Approved amount (required)"
        assert props["approved_amount"]["description"] == "In EUR"
        assert props["notes"]["title"] == "Notes" and schema["required"] == ["decision", "approved_amount"]
        description = _stored(keyset, flow_run_id, "description")
        inbox = f"{DASHBOARD}/inbox?task={task.id}"
        assert description.startswith("**Approve ACME**\n\n**ACME** asks to be paid 1200.0 EUR | upfront.")
        assert "| field | value |\n|---|---|\n| `amount` | 1200.0 |\n| `vendor` | ACME |" in description, description
        assert "internal_ref" not in description, "only the fields the task is about"
        assert f"[Open this task in Ergon's inbox]({inbox})" in description

        ui = os.environ["PREFECT_API_URL"].removesuffix("/api")
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM), args=[
                "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
            page = browser.new_page(viewport={"width": 1400, "height": 1100})
            page.set_default_timeout(30_000)
            page.goto(f"{ui}/runs/flow-run/{flow_run_id}")
            page.get_by_role("button", name="Resume").first.click()
            form = page.locator("[role=dialog]")
            expect(form.get_by_text("Decision (required)")).to_be_visible()
            expect(form.get_by_text("Approved amount (required)")).to_be_visible()
            expect(form.get_by_text("Notes (Optional)")).to_be_visible()
            expect(form.get_by_text("asks to be paid 1200.0 EUR | upfront.")).to_be_visible()
            expect(form.locator("table")).to_contain_text("ACME")
            expect(form.get_by_role("link", name="Open this task in Ergon's inbox")).to_have_attribute("href", inbox)
            SCREENSHOTS.mkdir(exist_ok=True)
            page.screenshot(path=str(SCREENSHOTS / "prefect-resume-form.png"), full_page=True)

            form.get_by_role("button", name="Submit").click()  # empty: Prefect's form refuses it
            expect(form.get_by_text("'decision' is a required property")).to_be_visible()
            form.locator(".p-select-button__control").first.click()
            if not page.get_by_role("listbox").is_visible():  # the first click only focuses it
                page.keyboard.press("ArrowDown")
            page.get_by_role("option", name="approve", exact=True).click()
            form.locator(".schema-form-property").filter(has_text="Approved amount").locator("input").fill("900")
            form.get_by_role("button", name="Submit").click()
            expect(form).to_have_count(0)  # the form closes once Prefect accepted the answer
            browser.close()
        result = finish(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert result["status"] == "completed" and result["outcome"] == "done", result
    assert result["context"]["approved_amount"] == 900 and result["context"]["decision"] == "approve"
    answered = task_store.get_task(task.id)
    assert answered.answered_via == "prefect" and answered.answer["approved_amount"] == 900



SIGNED = """
format_version: 1
process: signed_note
initial: review
context:
  schema:
    type: object
    properties:
      notes: {type: string}
nodes:
  review:
    type: human_task
    task:
      title: Sign this off
      assignee: group:finance
      fields:
        - {name: notes, type: text, label: Notes}
    writes: [notes]
    transitions: [{to: done}]
  done: {type: final}
"""


def test_the_answer_code_is_a_masked_field_of_prefects_form(env, definitions, tokens):
    """A task with an assignee asks a one-time answer code in Prefect's form: the V2 UI draws it as
    a password input (the V1 UI, which has no password widget, as a text box); answering there
    with the code ``ergon tasks code`` gave the approver records that approver."""
    import os
    import subprocess
    import sys

    from flows import people
    from flows.store import runs as run_store
    from flows.store import tasks as task_store

    people.add_user("vera", ["finance"])
    (definitions / "signed_note.yaml").write_text(SIGNED)
    proc = subprocess.Popen([sys.executable, "-m", "flows.cli", "run", "signed_note", "--json"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        task = wait_for_task("signed_note")
        flow_run_id = run_store.get_run(task.run_id).prefect_flow_run_id
        _stored(_paused(flow_run_id), flow_run_id, "schema")
        ui = os.environ["PREFECT_API_URL"].removesuffix("/api")
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM), args=[
                "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
            page = browser.new_page(viewport={"width": 1400, "height": 1100})
            page.set_default_timeout(30_000)
            page.goto(f"{ui}/v2/runs/flow-run/{flow_run_id}")
            page.get_by_role("button", name="Open menu").click()  # the V2 UI keeps Resume in the run's menu
            page.get_by_role("menuitem", name="Resume").click()
            form = page.get_by_role("dialog")
            expect(form.get_by_text("Your answer code (required)")).to_be_visible()
            code_input = form.locator("input[type=password]")
            expect(code_input).to_have_count(1)
            code = subprocess.run([sys.executable, "-m", "flows.cli", "tasks", "code", task.id, "--token", tokens["vera"]],
                                  env=env, capture_output=True, text=True, timeout=60)
            assert code.returncode == 0, code.stderr
            code_input.fill(code.stdout.strip())
            SCREENSHOTS.mkdir(exist_ok=True)
            page.screenshot(path=str(SCREENSHOTS / "prefect-resume-form-code.png"), full_page=True)
            form.get_by_role("button", name="Resume").click()
            expect(form).to_have_count(0)
            browser.close()
        result = finish(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert result["status"] == "completed", result
    answered = task_store.get_task(task.id)
    assert answered.answered_by == "vera" and answered.answered_via == "prefect"
