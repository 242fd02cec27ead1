"""A run killed (-9) while one workstream has completed and another still runs, then resumed: the
completed child is not run again (its result comes from the store), the running one starts over."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

import pytest

from workstream_defs import DELEGATING, ENV, text_of

pytestmark = pytest.mark.prefect

ERGON = [sys.executable, "-m", "flows.cli"]

ALPHA = {"id": "alpha", "name": "Alpha", "instruction": "Find the answer.", "allowed_tools": ["think"],
         "model": "alpha", "deadline_seconds": 120}
BETA = {"id": "beta", "name": "Beta", "instruction": "Take your time.", "allowed_tools": ["sleep"],
        "model": "beta", "deadline_seconds": 120}


def lead_responder(body: dict) -> dict:
    text = text_of(body)
    if not any(m.get("role") == "tool" for m in body["messages"]):
        return {"tool_calls": [{"name": "launch_workstream", "arguments": ALPHA},
                               {"name": "launch_workstream", "arguments": BETA}]}
    answer = re.search(r'"result": \{"answer": (\d+)\}', text)
    beta = re.search(r'\[completed\] `beta`.*"summary": "([^"]*)"', text)
    if answer and beta:
        return {"json": {"report": f"alpha found {answer.group(1)}, beta said {beta.group(1)}"}}
    return {"content": "waiting"}


def beta_responder():
    lock, count = threading.Lock(), [0]

    def respond(body: dict) -> dict:
        with lock:
            count[0] += 1
            first = count[0] == 1
        # the first launch sleeps until the process is killed; the relaunch answers at once
        return {"tool_calls": [{"name": "sleep", "arguments": {"duration": 60}}]} if first else {"content": "beta done"}

    return respond


def test_resume_adopts_the_completed_child_and_relaunches_the_running_one(prefect_api, store, definitions, fake):
    from flows.store import visits as visit_store
    from flows.store import runs as run_store
    from flows.store import workstreams as workstream_store

    for name, model in (("lead", "ws-lead"), ("alpha", "ws-alpha"), ("beta", "ws-beta")):
        (definitions / f"env_{name}.yaml").write_text(ENV.format(name=name, model=model, url=fake.url))
    (definitions / "delegating.yaml").write_text(DELEGATING)
    fake.respond("ws-lead", lead_responder)
    fake.script("ws-alpha", {"json": {"answer": 42}})
    fake.respond("ws-beta", beta_responder())

    env = {**os.environ, "ERGON_DATABASE_URL": store, "ERGON_DEFINITIONS": str(definitions)}
    proc = subprocess.Popen(ERGON + ["run", "delegating", "--json"], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    run_id = None
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            rows, _ = run_store.list_runs(definition="delegating")
            children = {w.key: w for w in workstream_store.for_run(rows[0].id)} if rows else {}
            if children.get("alpha") and children["alpha"].status == "completed" \
                    and children.get("beta") and children["beta"].tool == "sleep":
                run_id = rows[0].id
                break
            time.sleep(0.2)
        assert run_id, "alpha did not complete while beta slept"
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert len(fake.for_model("ws-alpha")) == 1 and len(fake.for_model("ws-beta")) == 1
    (lost_beta,) = [w for w in workstream_store.for_run(run_id) if w.key == "beta"]
    assert lost_beta.status == "running"  # as the killed process left it

    res = subprocess.run(ERGON + ["runs", "resume", run_id, "--json"], env=env, capture_output=True, text=True,
                         timeout=240)
    assert res.returncode == 0, res.stderr
    result = json.loads(res.stdout.strip().splitlines()[-1])
    assert result["status"] == "completed", result
    assert result["context"]["report"] == "alpha found 42, beta said beta done"

    assert len(fake.for_model("ws-alpha")) == 1, "the completed child was run again"
    assert len(fake.for_model("ws-beta")) == 2, "the running child was not launched again"
    lead_visits = [v for v in visit_store.visits_for_run(run_id) if v.node_id == "lead"]
    assert len(lead_visits) == 2 and lead_visits[-1].status == "completed"
    new_visit = lead_visits[-1].id
    rows = workstream_store.for_run(run_id)
    alpha = [w for w in rows if w.key == "alpha"]
    assert len(alpha) == 1 and alpha[0].parent_visit_id == new_visit  # adopted, not relaunched
    old_beta, new_beta = sorted((w for w in rows if w.key == "beta"), key=lambda w: w.created_at)
    assert (old_beta.status, old_beta.end_reason, old_beta.parent_visit_id) == ("failed", "crash", lead_visits[0].id)
    assert (new_beta.status, new_beta.relaunch_of, new_beta.parent_visit_id) == ("completed", old_beta.id, new_visit)
    assert new_beta.launch_id == old_beta.launch_id
    # the parent's first turn was not asked again: its answer came from the store
    reused = [c for c in visit_store.llm_calls_for_run(run_id, visit_id=new_visit) if (c.response or {}).get("reused_from")]
    assert reused
