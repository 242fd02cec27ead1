"""Crash, resume and cancel — with real `ergon` processes, killed and restarted."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from testing_tools import marks

pytestmark = pytest.mark.prefect

ERGON = [sys.executable, "-m", "flows.cli"]

CHAIN = """
format_version: 1
process: {name}
initial: a
context:
  schema: {{type: object, properties: {{last: {{type: string}}}}}}
nodes:
  a: {{type: tool, tool: mark, input: {{name: a}}, writes: [last], transitions: [{{to: b}}]}}
  b: {{type: tool, tool: mark, input: {{name: b, seconds: {b_seconds}}}, writes: [last], transitions: [{{to: c}}]}}
  c: {{type: tool, tool: mark, input: {{name: c}}, writes: [last], transitions: [{{to: {after_c}}}]}}
  done: {{type: final}}
"""


def ergon(args: list[str], env: dict, **kw) -> subprocess.Popen:
    return subprocess.Popen(ERGON + args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


@pytest.fixture
def cli_env(prefect_api, store, definitions):
    env = {**os.environ, "ERGON_DATABASE_URL": store, "ERGON_DEFINITIONS": str(definitions), "COLUMNS": "200"}
    return env


def wait_for(predicate, timeout: float = 60.0, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def test_resume_after_kill_does_not_repeat_completed_visits(cli_env, definitions):
    from flows.store import runs as run_store
    from flows.store import visits as visit_store

    (definitions / "crashy.yaml").write_text(CHAIN.format(name="crashy", b_seconds=5, after_c="done"))
    proc = ergon(["run", "crashy", "--json"], cli_env)
    try:
        def b_running():
            rows, _ = run_store.list_runs(definition="crashy")
            if not rows:
                return None
            vs = visit_store.visits_for_run(rows[0].id)
            return rows[0].id if any(v.node_id == "b" and v.status == "running" for v in vs) else None

        run_id = wait_for(b_running, what="node b to start")
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert run_store.get_run(run_id).status == "running", "a killed process leaves its run marked running"
    assert marks() == ["a"]

    res = subprocess.run(ERGON + ["runs", "resume", run_id, "--json"], env=cli_env,
                         capture_output=True, text=True, timeout=180)
    assert res.returncode == 0, res.stderr
    result = json.loads(res.stdout.strip().splitlines()[-1])
    assert result["status"] == "completed" and result["outcome"] == "done"
    assert marks() == ["a", "b", "c"], "a completed before the crash and was not repeated"
    run = run_store.get_run(run_id)
    assert run.status == "completed"
    a_visits = [v for v in visit_store.visits_for_run(run_id) if v.node_id == "a"]
    assert len(a_visits) == 1
    crashed_b = [v for v in visit_store.visits_for_run(run_id) if v.node_id == "b"]
    assert [v.status for v in crashed_b][-1] == "completed"
    assert "marked crashed" in res.stderr, "resume first detects the dead process"
    assert crashed_b[0].status != "running", "the visit the crash interrupted is closed"


def test_cancel_takes_effect_between_nodes(cli_env, definitions):
    from flows.store import runs as run_store
    from flows.store import visits as visit_store

    (definitions / "cancelme.yaml").write_text(CHAIN.format(name="cancelme", b_seconds=8, after_c="done"))
    proc = ergon(["run", "cancelme", "--json"], cli_env)
    try:
        def b_running():
            rows, _ = run_store.list_runs(definition="cancelme")
            if not rows:
                return None
            return rows[0].id if any(v.node_id == "b" and v.status == "running" for v in visit_store.visits_for_run(rows[0].id)) else None

        run_id = wait_for(b_running, what="node b to start")
        cancel = subprocess.run(ERGON + ["runs", "cancel", run_id], env=cli_env, capture_output=True, text=True, timeout=60)
        assert cancel.returncode == 0, cancel.stderr
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 1, err
    result = json.loads(out.strip().splitlines()[-1])
    assert result["status"] == "cancelled"
    assert marks() == ["a", "b"], "b finished, c never started"
    assert run_store.get_run(run_id).status == "cancelled"


def test_cli_run_json_and_exit_codes(cli_env, definitions):
    (definitions / "quick.yaml").write_text(CHAIN.format(name="quick", b_seconds=0, after_c="done"))
    ok = subprocess.run(ERGON + ["run", "quick", "--json"], env=cli_env, capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0, ok.stderr
    result = json.loads(ok.stdout.strip().splitlines()[-1])
    assert set(result) == {"run_id", "status", "outcome", "context", "error", "error_kind"}
    assert result["status"] == "completed" and result["context"] == {"last": "c"}
    assert "Traceback" not in ok.stderr and "Warning" not in ok.stderr

    bad_input = subprocess.run(ERGON + ["run", "quick", "--input", "nope=1"], env=cli_env, capture_output=True, text=True, timeout=60)
    assert bad_input.returncode == 2
    assert "error[invalid-input] nope: `nope` is not a field" in bad_input.stderr

    (definitions / "broken.yaml").write_text(CHAIN.format(name="broken", b_seconds=0, after_c="nowhere"))
    broken = subprocess.run(ERGON + ["run", "broken"], env=cli_env, capture_output=True, text=True, timeout=60)
    assert broken.returncode == 2
    assert "error[unknown-target]" in broken.stderr and "broken.yaml:" in broken.stderr

    shown = subprocess.run(ERGON + ["runs", "show", result["run_id"], "--json"], env=cli_env, capture_output=True, text=True, timeout=60)
    data = json.loads(shown.stdout)
    assert [v["node_id"] for v in data["visits"]] == ["a", "b", "c", "done"]
    assert data["visits"][0]["context_diff"][0]["new"] == "a"
    exported = subprocess.run(ERGON + ["runs", "export", result["run_id"]], env=cli_env, capture_output=True, text=True, timeout=60)
    assert json.loads(exported.stdout)["run"]["id"] == result["run_id"]


def test_prefect_retrying_the_flow_run_continues_from_the_checkpoint(prefect_api, store, definitions):
    """A flow run Prefect itself runs again (flow retries here; a retry from its UI or a worker
    re-running the same flow run take the same path) re-enters the same Ergon run, found by its
    Prefect flow-run id, and does not repeat a completed visit."""
    import asyncio

    from flows.prefect.build import build_flow
    from flows.catalog import Catalog
    from flows.store import runs as run_store
    from flows.store import visits as visit_store

    (definitions / "again.yaml").write_text("""
format_version: 1
process: again
initial: a
context:
  schema: {type: object, properties: {last: {type: string}, attempts: {type: integer}}}
nodes:
  a: {type: tool, tool: mark, input: {name: a}, writes: [last], transitions: [{to: shaky}]}
  shaky: {type: tool, tool: flaky, input: {key: again, failures: 1}, writes: [attempts], transitions: [{to: done}]}
  done: {type: final}
""")
    plan = Catalog.load().compile("again").plan
    flow = build_flow(plan).with_options(retries=1, retry_delay_seconds=0)
    state = asyncio.run(flow(return_state=True))  # started the way a deployment starts it: no Ergon request
    assert state.is_completed(), state

    [run], _ = run_store.list_runs(definition="again")
    assert (run.status, run.outcome, run.trigger) == ("completed", "done", "api")
    assert [(v.node_id, v.status) for v in visit_store.visits_for_run(run.id)] == [
        ("a", "completed"), ("shaky", "failed"), ("shaky", "completed"), ("done", "completed")]
    assert marks() == ["a"], "the completed visit of `a` was not repeated"
    assert run.context == {"last": "a", "attempts": 2}


def test_resuming_a_failed_foreach_reuses_its_completed_items(run_def):
    """A foreach that failed on one item resumes in the same parent visit: the items completed
    before are taken as they are, the failed one and those never started run, the parent visit
    completes (a resumed fan-out's parent was started by the process before)."""
    from flows import runs
    from flows.store import visits as visit_store
    from testing_tools import _ledger

    text = """
format_version: 1
process: fan_resume
initial: fan
context:
  schema: {type: object, properties: {items: {type: array}, results: {type: array}}}
  initial: {items: [{k: fr-a, f: 0}, {k: fr-b, f: 1}, {k: fr-c, f: 0}]}
nodes:
  fan:
    type: foreach
    foreach: items
    as: it
    item_id: "{{ it.k }}"
    max_concurrency: 1
    node: {type: tool, tool: flaky, input: {key: "{{ it.k }}", failures: "{{ it.f }}"}}
    collect: results
    failure_policy: fail_fast
    writes: [results]
    transitions: [{to: done}]
  done: {type: final}
"""
    first = run_def({"fan_resume.yaml": text}, "fan_resume")
    assert first["status"] == "failed", first
    resumed = runs.resume(first["run_id"])
    assert (resumed.status, resumed.outcome) == ("completed", "done"), resumed.error
    assert resumed.context["results"] == [{"attempts": 1}, {"attempts": 2}, {"attempts": 1}]
    assert [_ledger(f"flaky-{k}").read_text() for k in ("fr-a", "fr-b", "fr-c")] == ["1", "2", "1"], \
        "the item completed before the failure was not run again"
    parents = [v for v in visit_store.visits_for_run(first["run_id"]) if v.node_id == "fan"]
    assert [v.status for v in parents] == ["completed"], "the one parent visit, reopened and completed"
