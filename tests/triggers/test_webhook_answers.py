"""A webhook's answer says what happened to its run: once the run started, the answer is 202 with
its id, even when recording the trigger's last run fails afterwards — an error answer would make
the sender send the request again and start the run twice."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request

import pytest

from flows.triggers.webhooks import SIGNATURE_HEADER, TIMESTAMP_HEADER, sign

pytestmark = pytest.mark.prefect

HOOKED = """
kind: pipeline
name: hooked_once
context:
  schema: {type: object, properties: {who: {type: string}, last: {type: string}}}
  initial: {who: nobody}
triggers:
  - {type: webhook, path: /hooks/once, secret: once_secret, as_user: hook-bot}
nodes:
  note: {type: tool, tool: mark, input: {name: "{{who}}"}, writes: [last]}
"""
SECRET = "once-secret-value"


def _post(url: str, payload: dict) -> tuple[int, dict]:
    body = json.dumps(payload).encode()
    stamp = str(int(time.time()))
    request = urllib.request.Request(url, data=body, method="POST", headers={
        "Content-Type": "application/json", TIMESTAMP_HEADER: stamp, SIGNATURE_HEADER: sign(SECRET, stamp, body)})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_a_started_run_is_answered_202_when_its_trigger_state_cannot_be_written(prefect_api, store, definitions,
                                                                                 monkeypatch):
    from flows import secrets
    from flows.catalog import Catalog
    from flows.store import runs as run_store
    from flows.store import triggers as trigger_store
    from flows.trigger_refs import all_refs
    from flows.triggers.webhooks import WebhookServer

    (definitions / "hooked_once.yaml").write_text(HOOKED)
    secrets.set_secret("once_secret", SECRET)
    refs = [r for r in all_refs(Catalog.load()) if r.kind == "webhook"]

    def store_error(*args, **kwargs):
        raise RuntimeError("database is locked")

    monkeypatch.setattr(trigger_store, "upsert_trigger_state", store_error)
    server = WebhookServer(refs, port=0).start()
    try:
        status, answer = _post(f"{server.url}/hooks/once", {"who": "caller"})
    finally:
        server.stop()
    assert status == 202, answer
    runs = run_store.list_runs(definition="hooked_once", limit=10)[0]
    assert [r.id for r in runs] == [answer["run_id"]], "one run, the one the answer names"
    assert runs[0].trigger == "webhook" and runs[0].started_by == "hook-bot"
    deadline = time.monotonic() + 90
    while run_store.get_run(answer["run_id"]).status not in ("completed", "failed") and time.monotonic() < deadline:
        time.sleep(0.3)
    run = run_store.get_run(answer["run_id"])
    assert run.status == "completed" and run.context["last"] == "caller", run.error
