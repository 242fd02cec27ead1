"""The dashboard's Schedules page (Streamlit's AppTest: the real script, no browser)."""

from __future__ import annotations

from pathlib import Path

PAGE = str(Path(__file__).resolve().parents[2] / "ui" / "pages" / "schedules.py")

TRIGGERED = """
kind: pipeline
name: nightly
context:
  schema: {type: object, properties: {last: {type: string}}}
triggers:
  - {type: cron, cron: "0 2 * * *", timezone: Europe/Paris, as_user: night-bot}
  - {type: webhook, path: /hooks/nightly, secret: s}
nodes:
  note: {type: tool, tool: mark, input: {name: nightly}, writes: [last]}
"""


def test_page_lists_triggers_and_pauses_one(store, definitions, monkeypatch):
    from streamlit.testing.v1 import AppTest

    from flows.store import triggers as trigger_store

    monkeypatch.delenv("PREFECT_API_URL", raising=False)  # no server: the page still lists the store's view
    (definitions / "nightly.yaml").write_text(TRIGGERED)
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    assert not at.exception
    table = at.dataframe[0].value
    assert list(table["trigger"]) == ["nightly · trigger 1 (schedule)", "nightly · trigger 2 (webhook)"]
    assert list(table["when"]) == ["every day at 02:00 (Europe/Paris)", "POST /hooks/nightly"]
    assert list(table["as written"]) == ["cron 0 2 * * * (Europe/Paris)", "POST /hooks/nightly"]
    assert list(table["acts as"]) == ["night-bot", "ergon"]
    assert at.info and "Sign in" in at.info[0].value  # actions need a signed-in user
    from flows import people
    from ui import auth, session

    people.add_user("ann", password="pw")
    at.session_state[auth.TEST_TOKEN_KEY] = session.issue("ann")[0]  # what the sign-in cookie holds
    at.run()
    at.button(key="schedules_toggle").click().run()
    assert not at.exception
    assert [s.paused for s in trigger_store.list_trigger_states("nightly")] == [True]
    assert "nightly · trigger 1 (schedule) paused: it starts no runs until you resume it." in [m.value for m in at.success]
    assert list(at.dataframe[0].value["paused"]) == ["yes", ""]
