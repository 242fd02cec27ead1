"""Operator controls on stopped runs: real runs on Prefect fail, an admin repairs, advances,
skips or re-enters them (from the CLI and the API), every control lands in the run's trail with
who and why, and the resumed run goes where the control said."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.prefect

PROCESS = """
format_version: 1
process: operated
initial: intake
context:
  schema:
    type: object
    properties:
      amount: {type: integer}
      divisor: {type: integer}
      share: {type: integer}
      tier: {type: string}
      _seen: {type: boolean}
  initial: {amount: 5, divisor: 0}
nodes:
  intake:
    type: tool
    config: {context_update: {share: "{{ 100 // divisor }}"}}
    writes: [share]
    transitions:
      - {to: small, guard: {"<": [{var: amount}, 10]}}
      - {to: big}
  small:
    type: tool
    skippable: true
    config: {context_update: {tier: low}}
    writes: [tier]
    transitions: [{to: done}]
  big:
    type: tool
    config: {context_update: {tier: high}}
    writes: [tier]
    transitions: [{to: done}]
  done: {type: final}
"""


@pytest.fixture
def failed_run(run_def):
    """A run of `operated` that failed at `intake` (divisor 0); its id."""
    from flows import people

    people.add_user("ops", admin=True)
    people.add_user("viewer")

    def make() -> str:
        result = run_def({"operated.yaml": PROCESS}, "operated")
        assert result["status"] == "failed" and "ZeroDivisionError" in result["error"], result
        return result["run_id"]

    return make


def trail(run_id: str) -> list[tuple]:
    from flows.store import run_events

    return [(e.name, e.actor, e.outcome, (e.args or {}).get("why")) for e in run_events.events_for_run(run_id, kind="command")]


def test_set_context_then_retry_repairs_the_failed_node_and_the_resume_completes(failed_run):
    from flows import runs
    from flows.runs import controls

    run_id = failed_run()
    with pytest.raises(controls.ControlRefused, match="only admins"):
        controls.set_context(run_id, {"divisor": 4}, actor="viewer", why="fix")
    with pytest.raises(controls.ControlRefused, match="internal fields cannot be written"):
        controls.set_context(run_id, {"_seen": True}, actor="ops", why="fix")
    with pytest.raises(controls.ControlRefused, match="violates context.schema"):
        controls.set_context(run_id, {"divisor": "four"}, actor="ops", why="fix")
    assert controls.set_context(run_id, {"divisor": 4}, actor="ops", why="divisor was missing")["divisor"] == 4
    assert controls.retry_node(run_id, actor="ops", why="try again") == "intake"
    result = runs.resume(run_id)
    assert result.status == "completed" and result.context["share"] == 25 and result.context["tier"] == "low"
    assert trail(run_id) == [
        ("set_context", "viewer", "refused", "fix"), ("set_context", "ops", "refused", "fix"),
        ("set_context", "ops", "refused", "fix"), ("set_context", "ops", "accepted", "divisor was missing"),
        ("retry_node", "ops", "accepted", "try again")]


def test_advance_leaves_the_failed_node_through_a_declared_exit_only(failed_run):
    from flows import runs
    from flows.runs import controls
    from flows.store import visits as visit_store

    run_id = failed_run()
    with pytest.raises(controls.ControlRefused, match="`done` is not a declared exit of `intake`"):
        controls.advance(run_id, "done", actor="ops", why="shortcut")
    with pytest.raises(controls.ControlRefused, match="`intake` is not skippable"):
        controls.skip_node(run_id, actor="ops", why="skip")
    controls.advance(run_id, "big", actor="ops", why="large amount, by hand")
    result = runs.resume(run_id)
    assert result.status == "completed" and result.context["tier"] == "high" and "share" not in result.context
    intake = [(v.status, v.next_node, v.error) for v in visit_store.visits_for_run(run_id) if v.node_id == "intake"]
    assert intake[-1] == ("skipped", "big", "advanced by ops: large amount, by hand")
    assert [v.node_id for v in visit_store.visits_for_run(run_id) if v.status == "completed"] == ["big", "done"]
    with pytest.raises(controls.ControlRefused, match="operator controls act on failed or crashed runs"):
        controls.advance(run_id, "big", actor="ops", why="again")


def test_the_cli_records_a_control_and_refuses_a_non_admin(failed_run, tokens):
    run_id = failed_run()
    cmd = [sys.executable, "-m", "flows.cli", "runs", "advance", run_id, "--to", "big", "--why", "by hand", "--no-resume"]
    refused = subprocess.run(cmd, env={**os.environ, "ERGON_TOKEN": tokens["viewer"]}, capture_output=True, text=True,
                             timeout=120)
    assert refused.returncode == 1 and "only admins" in refused.stderr and "Traceback" not in refused.stderr
    done = subprocess.run(cmd, env={**os.environ, "ERGON_TOKEN": tokens["ops"]}, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert "advanced from `intake` to `big`" in done.stdout and "not resumed" in done.stdout
    assert trail(run_id) == [("advance", "viewer", "refused", "by hand"), ("advance", "ops", "accepted", "by hand")]


def test_explain_outlines_a_node_and_its_guards_without_a_model(definitions):
    from flows.catalog import Catalog
    from flows.runs.explain import ExplainRefused, outline

    (definitions / "operated.yaml").write_text(PROCESS)
    plan = Catalog.load().compile("operated").plan
    text = outline(plan, node="intake")
    assert "`intake` is a tool node." in text and "It writes `share`." in text
    assert "→ `small` when amount < 10" in text and "→ `big` always" in text
    assert "→ `big`" in outline(plan, node="intake", guard=1)
    with pytest.raises(ExplainRefused, match="guard 5"):
        outline(plan, node="intake", guard=5)
    assert "`operated` is a process" in outline(plan) and "The run ends here with the outcome `done`." in outline(plan)


def test_retry_skip_and_set_context_from_the_cli_each_leave_an_audit_entry(failed_run, tokens):
    from flows.store import visits as visit_store

    run_id = failed_run()
    env = {**os.environ, "ERGON_TOKEN": tokens["ops"]}

    def ergon(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "flows.cli", "runs", *args], env=env, capture_output=True,
                              text=True, timeout=300)

    skip = ergon("skip", run_id, "--why", "not needed", "--no-resume")
    assert skip.returncode == 1 and "`intake` is not skippable" in skip.stderr
    bad = ergon("set-context", run_id, "--set", "_seen=true", "--why", "mark", "--no-resume")
    assert bad.returncode == 1 and "internal fields cannot be written" in bad.stderr
    fixed = ergon("set-context", run_id, "--set", "divisor=10", "--why", "divisor was missing", "--no-resume")
    assert fixed.returncode == 0 and "context set (divisor)" in fixed.stdout, fixed.stderr
    resumed = ergon("retry", run_id, "--why", "after the repair")
    assert resumed.returncode == 0 and "completed" in resumed.stdout, resumed.stderr
    from flows.store import runs as run_store

    assert run_store.require_run(run_id).context["share"] == 10
    assert trail(run_id) == [("skip_node", "ops", "refused", "not needed"), ("set_context", "ops", "refused", "mark"),
                             ("set_context", "ops", "accepted", "divisor was missing"),
                             ("retry_node", "ops", "accepted", "after the repair")]
    assert [v.node_id for v in visit_store.visits_for_run(run_id) if v.status == "completed"] == ["intake", "small", "done"]
