"""`ergon serve` for real: a Prefect runner firing interval and cron schedules, a failed scheduled
run retried from its checkpoint, signed webhooks over HTTP, and a stop that pauses nothing.

One serve process for the module (starting one costs ~10 s); the tests run in file order and
the last one stops it.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request

import pytest

from trigger_helpers import ERGON, Served, free_port, wait_for

pytestmark = pytest.mark.prefect

TICKER = """
kind: pipeline
name: ticker
context:
  schema: {type: object, properties: {who: {type: string}, last: {type: string}}}
  initial: {who: nobody}
triggers:
  - {type: interval, every: 8, input: {who: tick}, as_user: tick-bot}
nodes:
  note: {type: tool, tool: mark, input: {name: "{{who}}"}, writes: [last]}
"""

# `first` runs once per run; `shaky` fails the first attempt of the whole test (no node retry),
# so the first scheduled run fails and only the trigger's retry can complete it.
RETRIED = """
kind: pipeline
name: retried
context:
  schema: {type: object, properties: {last: {type: string}, attempts: {type: integer}}}
triggers:
  - type: interval
    every: 12
    as_user: retry-bot
    retry: {retries: 2, delay_seconds: 1, backoff: 2}
nodes:
  first: {type: tool, tool: mark, input: {name: retried-first}, writes: [last]}
  shaky: {type: tool, tool: flaky, input: {key: retried, failures: 1}, writes: [attempts], needs: [first]}
"""

MINUTELY = """
kind: pipeline
name: minutely
context:
  schema: {type: object, properties: {last: {type: string}}}
triggers:
  - {type: cron, cron: "* * * * *", timezone: Europe/Paris, as_user: cron-bot}
nodes:
  note: {type: tool, tool: mark, input: {name: minute}, writes: [last]}
"""

HOOKED = """
kind: pipeline
name: hooked
context:
  schema:
    type: object
    properties: {who: {type: string}, count: {type: integer}, last: {type: string}}
  initial: {who: nobody}
triggers:
  - {type: webhook, path: /hooks/hooked, secret: hook_secret, input: {who: default}, as_user: hook-bot}
nodes:
  note: {type: tool, tool: mark, input: {name: "{{who}}"}, writes: [last]}
"""

SECRET = "s3cret-for-tests"


@pytest.fixture(scope="module")
def served(serve_env):
    from flows import secrets

    folder, env = serve_env
    for name, text in {"ticker": TICKER, "retried": RETRIED, "minutely": MINUTELY, "hooked": HOOKED}.items():
        (folder / f"{name}.yaml").write_text(text)
    secrets.set_secret("hook_secret", SECRET)
    env = {**env, **_secret_env()}
    server = Served(folder, env, free_port()).start()
    yield server
    server.stop()


def _secret_env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if k.startswith("ERGON_SECRET")}


def runs_of(name: str):
    from flows.store import runs as run_store

    return sorted(run_store.list_runs(definition=name, limit=500)[0], key=lambda r: r.created_at)


# ------------------------------------------------------------------ schedules
def test_interval_schedule_runs_as_its_trigger(served):
    from flows.store import triggers as trigger_store

    done = wait_for(lambda: [r for r in runs_of("ticker") if r.status == "completed"][:2] if
                    len([r for r in runs_of("ticker") if r.status == "completed"]) >= 2 else None,
                    120, "two completed ticker runs")
    for run in done:
        assert run.trigger == "schedule"
        assert run.started_by == "tick-bot"
        assert run.context["last"] == "tick"  # the trigger's input reached the run
        assert run.prefect_flow_run_id
    state = [s for s in trigger_store.list_trigger_states("ticker") if s.trigger_index == 0][0]
    assert state.kind == "interval" and not state.paused
    assert state.last_run_id in {r.id for r in runs_of("ticker")}


def test_failed_scheduled_run_is_retried_from_its_checkpoint(served):
    from flows.store import visits as visit_store
    from flows.prefect.schedules import prefect_schedule_states

    first = wait_for(lambda: (rs := runs_of("retried")) and rs[0].status == "completed" and rs[0], 150,
                     "the first `retried` run to complete after its retry")
    assert (first.trigger, first.started_by) == ("schedule", "retry-bot")
    assert first.context["attempts"] == 2  # the second attempt of `shaky` succeeded
    visits = [(v.node_id, v.status) for v in visit_store.visits_for_run(first.id)]
    # `first` completed before the failure and was not visited again; only `shaky` re-ran
    assert visits == [("first", "completed"), ("shaky", "failed"), ("shaky", "completed")], visits
    # one Prefect flow run ↔ one Ergon run: the retry re-entered the same flow run
    assert len({r.prefect_flow_run_id for r in runs_of("retried")}) == len(runs_of("retried"))
    # the failure left the schedule enabled: the next tick runs too
    wait_for(lambda: len([r for r in runs_of("retried") if r.status == "completed"]) >= 2, 120, "a later `retried` run")
    assert prefect_schedule_states("retried") == {"trigger-0": True}


def test_schedules_list_shows_next_and_last_runs(served):
    import subprocess

    proc = subprocess.run(ERGON + ["schedules", "list", "--json"], env=served.env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    rows = {r["name"]: r for r in json.loads(proc.stdout)["triggers"]}
    assert set(rows) == {"ticker:0", "retried:0", "minutely:0", "hooked:0"}
    ticker = rows["ticker:0"]
    assert ticker["kind"] == "interval" and ticker["as_user"] == "tick-bot" and not ticker["paused"]
    assert ticker["next_run_at"] is not None  # asked from Prefect's scheduled runs
    assert ticker["last_status"] in ("pending", "running", "completed")
    assert rows["hooked:0"]["schedule"] == "POST /hooks/hooked"


def test_pause_and_resume_go_through_prefect(served):
    import subprocess

    from flows.prefect.schedules import prefect_schedule_states

    def cli(*args):
        proc = subprocess.run(ERGON + ["schedules", *args], env=served.env, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    assert "paused ticker:0" in cli("pause", "ticker:0")
    assert prefect_schedule_states("ticker") == {"trigger-0": False}
    rows = {r["name"]: r for r in json.loads(cli("list", "--json"))["triggers"]}
    assert rows["ticker:0"]["paused"] is True
    assert "resumed ticker:0" in cli("resume", "ticker:0")
    assert prefect_schedule_states("ticker") == {"trigger-0": True}


def test_run_now_starts_the_trigger_run(served):
    import subprocess

    from flows.store import runs as run_store

    proc = subprocess.run(ERGON + ["schedules", "run-now", "ticker:0"], env=served.env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    run_id = proc.stdout.split("started run ")[1].split()[0]
    run = wait_for(lambda: (r := run_store.get_run(run_id)) and r.status == "completed" and r, 120, "the run-now run")
    assert (run.trigger, run.started_by, run.context["last"]) == ("schedule", "tick-bot", "tick")
    bad = subprocess.run(ERGON + ["schedules", "run-now", "tickr:0"], env=served.env, capture_output=True, text=True,
                         timeout=120)
    assert bad.returncode == 2 and "did you mean `ticker:0`" in bad.stderr


# ------------------------------------------------------------------ webhooks
def post(served, path: str, body: bytes, headers: dict[str, str]) -> tuple[int, dict]:
    request = urllib.request.Request(served.url + path, data=body, method="POST",
                                     headers={"Content-Type": "application/json", **headers})
    try:
        with urllib.request.urlopen(request, timeout=30) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def signed(body: bytes, *, secret: str = SECRET, at: int | None = None) -> dict[str, str]:
    from flows.triggers.webhooks import sign

    ts = str(at if at is not None else int(time.time()))
    return {"X-Ergon-Timestamp": ts, "X-Ergon-Signature": sign(secret, ts, body)}


def test_webhook_with_valid_signature_starts_a_run(served):
    from flows.store import runs as run_store

    body = json.dumps({"who": "from-hook"}).encode()
    headers = signed(body)
    status, answer = post(served, "/hooks/hooked", body, headers)
    assert status == 202, answer
    run = wait_for(lambda: (r := run_store.get_run(answer["run_id"])) and r.status == "completed" and r, 120, "the webhook run")
    assert (run.trigger, run.started_by) == ("webhook", "hook-bot")
    assert run.context["last"] == "from-hook"  # the body overrides the trigger's input
    # the very same signed request a second time is a replay: refused, nothing started
    before = len(runs_of("hooked"))
    status, answer = post(served, "/hooks/hooked", body, headers)
    assert status == 401 and "replay" in answer["error"]
    assert len(runs_of("hooked")) == before


@pytest.mark.parametrize("case", ["wrong-secret", "tampered-body", "missing-signature", "missing-timestamp", "stale"])
def test_webhook_refuses_unsigned_requests_and_starts_nothing(served, case):
    body = json.dumps({"who": "intruder"}).encode()
    headers = {
        "wrong-secret": signed(body, secret="guess"),
        "tampered-body": signed(b'{"who": "someone else"}'),
        "missing-signature": {"X-Ergon-Timestamp": str(int(time.time()))},
        "missing-timestamp": {"X-Ergon-Signature": signed(body)["X-Ergon-Signature"]},
        "stale": signed(body, at=int(time.time()) - 301),  # a captured request replayed 5 minutes later
    }[case]
    before = len(runs_of("hooked"))
    status, answer = post(served, "/hooks/hooked", body, headers)
    assert status == 401, answer
    time.sleep(0.5)
    assert len(runs_of("hooked")) == before
    assert not any(r.context.get("last") == "intruder" or (r.inputs or {}).get("who") == "intruder" for r in runs_of("hooked"))


def test_webhook_bad_inputs_and_unknown_path(served):
    body = json.dumps({"count": "not a number"}).encode()
    status, answer = post(served, "/hooks/hooked", body, signed(body))
    assert status == 422 and answer["problems"] and answer["problems"][0]["code"] == "invalid-input"
    status, _ = post(served, "/hooks/nothing", b"{}", signed(b"{}"))
    assert status == 404
    status, answer = post(served, "/hooks/hooked", b"[1]", signed(b"[1]"))
    assert status == 400


# ------------------------------------------------------------------ cron, then stop
def test_cron_schedule_fires(served):
    wait_for(lambda: [r for r in runs_of("minutely") if r.status == "completed"], 130, "a cron run (up to a minute)")
    run = [r for r in runs_of("minutely") if r.status == "completed"][0]
    assert (run.trigger, run.started_by) == ("schedule", "cron-bot")


def test_stopping_serve_leaves_schedules_active(served):
    from flows.prefect.schedules import prefect_schedule_states

    assert served.stop() == 0, served.log.read_text()[-2000:]
    assert "stopped; schedules left active" in served.log.read_text()
    for name in ("ticker", "retried", "minutely"):
        assert prefect_schedule_states(name) == {"trigger-0": True}, name
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        assert not client.read_deployment_by_name("ticker/ticker").paused
