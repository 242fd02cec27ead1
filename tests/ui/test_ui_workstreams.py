"""The run page's workstreams section (ui/workstreams.py): an agent visit's children with their state,
phase and deadline bar, from a store seeded the way a run writes it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import yaml

from ui.workstreams import deadline_share, summaries

T0 = datetime(2026, 1, 1, 9, 0, tzinfo=UTC)

LEAD = """
format_version: 1
process: delegating_ui
initial: lead
context:
  schema: {type: object, properties: {report: {type: string}}}
nodes:
  lead:
    type: agent
    prompt: "Delegate."
    tools: [think, launch_workstream, check_workstream]
    writes: [report]
    transitions: [{to: done}]
  done: {type: final}
"""


def _row(**kw):
    base = dict(id="w1", key="alpha", name="Alpha", status="running", phase="executing_tool", tool="sleep", iteration=2,
                deadline_seconds=100.0, created_at=T0, started_at=T0, ended_at=None, interactive=False, relaunch_of=None,
                end_reason=None, progress="looking", error=None, summary=None, result=None, prefect_flow_run_id=None)
    return SimpleNamespace(**{**base, **kw})


def test_the_deadline_bar_runs_to_now_while_a_child_runs_and_stops_at_its_end():
    assert deadline_share(_row(), now=T0 + timedelta(seconds=25)) == 0.25
    ended = _row(status="timeout", ended_at=T0 + timedelta(seconds=130))
    assert deadline_share(ended, now=T0 + timedelta(hours=1)) == 1.0
    (item,) = summaries([_row(relaunch_of="w0", interactive=True)], now=T0 + timedelta(seconds=50))
    assert item["phase"] == "executing tool `sleep`" and item["bar"] == "50% of its 100 s deadline"
    assert item["notes"] == ["interactive", "relaunched after a crash"]
    (stopped,) = summaries([_row(status="timeout", end_reason="deadline", ended_at=T0 + timedelta(seconds=100))])
    assert stopped["notes"] == ["ended: deadline"]


def test_the_run_page_shows_an_agent_visits_workstreams(make_app, store):
    from flows.store import runs as run_store
    from flows.store import visits as visit_store
    from flows.store import workstreams as workstream_store

    run = run_store.create_run("delegating_ui", content=yaml.safe_load(LEAD), context={})
    run_store.set_run_status(run.id, "running")
    visit = visit_store.start_visit(run.id, "lead", "agent", input={"prompt": "Delegate."})
    now = datetime.now(UTC)
    done = workstream_store.create(
        launch_id="ws_alpha_1", run_id=run.id, parent_visit_id=visit.id, node_id="lead", key="alpha", name="Alpha",
        instruction="Find it.", allowed_tools=[], deadline_seconds=60, status="completed", phase="done",
        summary='{"answer": 42}', result={"answer": 42}, end_reason="completed", started_at=now - timedelta(seconds=30),
        ended_at=now - timedelta(seconds=24))
    workstream_store.create(
        launch_id="ws_beta_1", run_id=run.id, parent_visit_id=visit.id, node_id="lead", key="beta", name="Beta",
        instruction="Wait.", allowed_tools=["sleep"], deadline_seconds=60, status="running", phase="executing_tool",
        tool="sleep", iteration=3, progress="still sleeping", started_at=now - timedelta(seconds=30))
    visit_store.record_llm_call(run.id, "openai/alpha", workstream_id=done.id, tokens_in=10, tokens_out=5,
                                messages=[{"role": "user", "content": "Find it."}], response={"content": "42"})
    visit_store.checkpoint_visit(visit.id, run.id, output={"report": "r"}, context_diff=[], context={"report": "r"},
                                 next_node="done")

    at = make_app(run=run.id)
    at.run()
    at.switch_page("pages/run.py").run()
    assert not at.exception
    at.selectbox(key="inspect_node").set_value("lead").run()
    texts = "\n".join(str(e.value) for kind in ("markdown", "caption") for e in getattr(at, kind))
    assert "2 workstream(s)" in texts
    assert "**Alpha** `alpha` · completed · phase done · iteration 0" in texts
    assert "**Beta** `beta` · running · phase executing tool `sleep` · iteration 3" in texts
    assert "1 LLM call(s) · 15 tokens" in texts and "still sleeping" in texts
    bars = [p.proto.text for p in at.get("progress")]
    assert any(b.startswith("10% of its 60 s deadline") for b in bars), bars  # alpha: 6 s of 60
    assert any(b.startswith("5") and b.endswith("% of its 60 s deadline") for b in bars), bars  # beta: 30 s so far
