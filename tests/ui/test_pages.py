"""Every dashboard page under AppTest, against a store holding real runs (a failed run, a
foreach run, run through Prefect by ``run_def``) and a run waiting at a human task."""

from __future__ import annotations

import json
import time

import pytest

import ui_seed as seed
from ui_seed import sign_in
from ui_defs import ALL
from flows.store import runs as run_store
from flows.store import tasks as task_store
from flows.store import visits as visit_store

pytestmark = pytest.mark.prefect


def _diff_rows(at) -> list[tuple[str, ...]]:
    """The rows (op, path, old, new) of the context change the run page shows (an HTML table)."""
    import html
    import re

    [table] = [h.value for h in at.html if 'class="ergon-diff"' in h.value]
    cells = [html.unescape(c) for c in re.findall(r"<td><code>(.*?)</code></td>", table, re.S)]
    return [tuple(cells[i:i + 4]) for i in range(0, len(cells), 4)]


def _texts(at) -> str:
    parts = [e.value for kind in ("markdown", "caption", "error", "warning", "info", "success") for e in getattr(at, kind)]
    return "\n".join(str(p) for p in parts)


def _dot(at) -> str:
    charts = at.get("graphviz_chart")
    assert charts, "the page draws a graph"
    return charts[0].proto.spec


def _button(at, label: str):
    matches = [b for b in at.button if b.label == label]
    assert matches, f"no button {label!r}; buttons: {[b.label for b in at.button]}"
    return matches[0]


@pytest.fixture
def runs(run_def, ui_defs, people):
    """A failed run, a foreach run and a paused review run (with artifacts), by id."""
    failed = run_def(ALL, "boom")
    assert failed["status"] == "failed", failed
    fe = run_def(ALL, "doubler", {"numbers": [1, 2, 3, 4]})
    assert fe["status"] == "completed", fe
    paused, task = seed.paused_review()
    seed.artifacts(paused.id)
    return {"failed": failed["run_id"], "foreach": fe["run_id"], "paused": paused.id, "task": task.id}


def _wait_for(condition, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.3)


def _wait_ended(run_id: str, timeout: float = 120) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = run_store.run_status(run_id)
        if status in ("completed", "failed", "crashed", "cancelled"):
            return status
        time.sleep(0.3)
    raise AssertionError(f"run {run_id} did not end: {run_store.run_status(run_id)}")


# --------------------------------------------------------------------------------- runs page
def _runs(at) -> list[dict]:
    """The rows the Runs page's table draws (``ui/runs_table.py``: its data, as sent to the browser)."""
    tables = [e for e in at.get("bidi_component") if e.proto.component_name == "ergon_runs_table"]
    assert len(tables) == 1, "the page draws one runs table"
    return json.loads(tables[0].proto.bytes)["rows"]


def test_runs_page_lists_filters_and_paginates(make_app, runs):
    for i in range(57):  # bulk rows to page through
        run_store.create_run("bulk", inputs={"i": i}, started_by="loader")
    at = make_app()
    at.run()
    assert not at.exception
    table = _runs(at)
    assert len(table) == 50, "one page of 50, newest first"
    assert "1–50 of 60 run(s)" in _texts(at)
    assert table[0]["definition"] == "bulk"
    versions = {r["version"] for r in table}
    assert versions == {"draft"} and "None" not in versions, "unpublished runs say so"
    costs = {r["cost"] for r in table}
    assert "$0" in costs and "" not in costs
    assert all(r["href"] == f"run?run={r['id']}" for r in table), "each row links to its run page"

    at.session_state["runs_page"] = 2
    at.run()
    page2 = _runs(at)
    assert "51–60 of 60 run(s)" in _texts(at)
    assert {r["definition"] for r in page2} == {"bulk", "boom", "doubler", "review"}, "the oldest runs are on page 2"

    child = run_store.create_run("bulk_step", started_by="loader", parent_run_id=runs["failed"])
    at.session_state["runs_page"] = 1
    at.run()
    row = next(r for r in _runs(at) if r["id"] == child.id)
    assert row["definition"] == "↳ bulk_step" and row["trigger"] == "sub-process", "a sub-process run is marked"

    at.multiselect(key="runs_status").set_value(["failed"]).run()
    only = _runs(at)
    assert [r["definition"] for r in only] == ["boom"] and only[0]["status"] == "failed"
    assert only[0]["id"] == runs["failed"] and only[0]["duration_n"] is not None

    at.multiselect(key="runs_status").set_value([]).run()
    at.text_input(key="runs_text").input("doubl").run()
    assert [r["definition"] for r in _runs(at)] == ["doubler"]
    at.text_input(key="runs_text").input("").run()
    at.selectbox(key="runs_definition").set_value("review").run()
    review = _runs(at)
    assert [r["definition"] for r in review] == ["review"] and review[0]["status"] == "paused"
    assert not at.get("dataframe"), "no data grid on the Runs page"


# --------------------------------------------------------------------------------- run page
def test_failed_run_page_shows_the_route_the_error_and_offers_resume(make_app, runs):
    at = make_app(run=runs["failed"])
    at.run()
    at.switch_page("pages/run.py").run()
    assert not at.exception
    assert at.metric[0].value.endswith("failed")
    assert "item 3 is bad" in "\n".join(e.value for e in at.error)
    dot = _dot(at)
    assert '"first" [label="first", shape="box", fillcolor="#c8e6c9"' in dot, "completed node is green"
    assert '"explode" [label="explode", shape="box", fillcolor="#ffcdd2", color="#c62828", penwidth="3"' in dot, \
        "the failed node is red and emphasised"
    assert '"first" -> "explode" [color="#2e7d32", penwidth="2.5"]' in dot, "the transition taken is drawn stronger"
    assert '"explode" -> "done";' in dot, "the transition not taken stays plain"
    assert {b.label for b in at.button} >= {"Resume", "Replay"} and "Cancel…" not in {b.label for b in at.button}
    assert at.selectbox(key="inspect_node").value == "explode", "the inspector opens where the run stopped"
    text = _texts(at)
    assert "tool step" in text and "1 visit(s), newest first" in text
    assert not at.code, "the node's definition is drawn only when asked for"
    at.session_state["yaml:explode"] = True  # opening its expander
    at.run()
    codes = [c.value for c in at.code]
    assert any("explode:" in c and "tool: double_unless" in c for c in codes), "the node's definition as YAML"
    recorded = {v.node_id: v.input for v in visit_store.visits_for_run(runs["failed"])}
    assert recorded == {"first": {"value": 2}, "explode": {"value": 3, "bad": 3}}, \
        "a tool node's visit keeps the arguments the tool received, also when the tool fails"
    assert {"value": 3, "bad": 3} in seed.json_trees(at), "the inspector shows them"
    assert at.get("download_button"), "export JSON"

    # Actions need a sign-in; signed in, a resume starts `ergon runs resume` in the background.
    _button(at, "Resume").click().run()
    assert "Sign in (in the sidebar) to resume runs." in _texts(at)
    sign_in(at, "alice")
    at.run()
    _button(at, "Resume").click().run()
    assert "Resuming" in _texts(at)
    _wait_for(lambda: len(visit_store.visits_for_run(runs["failed"])) == 3 and run_store.run_status(runs["failed"]) == "failed")
    assert [v.node_id for v in visit_store.visits_for_run(runs["failed"])] == ["first", "explode", "explode"], \
        "the resume went on after the last completed node"


def test_run_page_duration_leaves_out_the_time_a_failed_run_lay_stopped(make_app, store, ui_defs):
    """A run that failed after 1 s, lay stopped a day, was resumed and completed 2 s later ran 3 s.
    An item of its first visit (not a top-level visit) that ended hours later does not count."""
    from datetime import UTC, datetime, timedelta

    import sqlalchemy as sa

    from flows.store.db import session
    from flows.store.models import NodeVisit, Run

    t0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
    run = run_store.create_run("boom")
    first = visit_store.start_visit(run.id, "first", "tool")
    item = visit_store.start_visit(run.id, "first", "tool", parent_visit_id=first.id, item_key="a")
    visit_store.finish_visit(item.id, "failed", error="late item")
    visit_store.finish_visit(first.id, "failed", error="boom")
    again = visit_store.start_visit(run.id, "first", "tool")
    visit_store.finish_visit(again.id, "completed")
    times = {first.id: (t0, t0 + timedelta(seconds=1)),
             item.id: (t0 + timedelta(seconds=0.5), t0 + timedelta(hours=11)),
             again.id: (t0 + timedelta(days=1), t0 + timedelta(days=1, seconds=2))}
    with session(write=True) as s:
        for visit_id, (started, ended) in times.items():
            s.exec(sa.update(NodeVisit.__table__).where(NodeVisit.__table__.c.id == visit_id)
                   .values(started_at=started, ended_at=ended))
        s.exec(sa.update(Run.__table__).where(Run.__table__.c.id == run.id)
               .values(status="completed", started_at=t0, ended_at=t0 + timedelta(days=1, seconds=2)))
    at = make_app(run=run.id)
    at.run()
    at.switch_page("pages/run.py").run()
    assert not at.exception
    assert {m.label: m.value for m in at.metric}["Duration"] == "3.0 s"


def test_foreach_run_page_shows_items_diffs_and_tool_calls(make_app, runs):
    item = next(v for v in visit_store.visits_for_run(runs["foreach"]) if v.item_key == "n2")
    visit_store.record_llm_call(runs["foreach"], "offline", visit_id=item.id, messages=[{"role": "user", "content": "2?"}],
                                response="4", latency_ms=42)
    at = make_app(run=runs["foreach"])
    at.run()
    at.switch_page("pages/run.py").run()
    assert not at.exception
    assert at.metric[0].value.endswith("completed") and at.metric[1].value == "done"
    assert at.selectbox(key="inspect_node").value == "start", \
        "a completed run opens on the last node that changed the context, not its empty final node"
    assert 'rankdir="LR"' in _dot(at), "laid out left to right, to fit the page's width"
    at.selectbox(key="inspect_node").set_value("start").run()
    frames = {id(f): f.value for f in at.dataframe}
    items = next(v for v in frames.values() if "item" in v.columns and "attempt" in v.columns and len(v) == 4)
    assert sorted(items["item"]) == ["n1", "n2", "n3", "n4"]
    assert sum("failed" in s for s in items["status"]) == 1, "item n3 failed (collect_errors keeps the rest)"
    diff = _diff_rows(at)
    assert [path for _, path, _, _ in diff] == ["/results"] and diff[0][0] == "add"
    assert "item `n3` failed" in _texts(at) or "item 3 is bad" in items["error"].str.cat()
    assert "**LLM call 1** · item `n2` · `offline`" in _texts(at) and "· 42 ms" in _texts(at), \
        "a foreach's calls say which item they belong to"
    at.session_state["run_tabs"] = "Visits"  # the other tabs are drawn when opened
    at.run()
    visits_table = next(f.value for f in at.dataframe if "next" in f.value.columns)
    assert len(visits_table) == 6, "the foreach visit, four items and the final node"


def test_paused_run_page_cancel_and_replay(make_app, runs):
    at = make_app("alice", run=runs["paused"])
    at.run()
    at.switch_page("pages/run.py").run()
    assert not at.exception
    assert "refreshing while it runs" in _texts(at)
    assert at.selectbox(key="inspect_node").value == "review"
    assert "Legal decides whether the contract goes ahead." in _texts(at), "the node's human_description"
    assert "**Task** Review ACME" in _texts(at)
    at.selectbox(key="inspect_node").set_value("prepare").run()
    text = _texts(at)
    assert "conversation · 1 LLM call(s) · 19 tokens · $0.0020 · 1 tool call(s)" in text
    assert "Tool `increment`" in text, "the visit's tool calls"
    codes = [c.value for c in at.code]
    assert seed.PROMPT in codes and "Count, please." in codes, "prompts preformatted, as the model read them"
    assert {"counter": 1} in seed.json_trees(at), "a response written as JSON text reads as JSON"
    assert "· 840 ms" in text, "each call's latency"
    assert [m.name for m in at.chat_message][:2] == ["ai", "user"], "system prompt, then the user's message"
    at.session_state["run_tabs"] = "Artifacts"
    at.run()
    art = next(t for t in at.tabs if t.label == "Artifacts")
    assert any("report" in e.label for e in art.expander), "the run's artifacts"

    _button(at, "Replay").click().run()
    replay = run_store.list_runs(definition="review")[0][0]
    assert replay.id != runs["paused"] and replay.trigger == "replay" and replay.inputs == {"party": "ACME"}
    assert replay.started_by == "alice"
    assert f"Replay started as a process on this host (pid {replay.ran_pid or replay.pid}): run {replay.id}" in \
        [p.proto.label for p in at.get("page_link")], "the link says which way the replay went"
    run_store.set_run_status(replay.id, "cancelled")  # no one will answer the replay's task

    _button(at, "Cancel…").click().run()
    assert "**Cancel this run?**" in _texts(at) and run_store.get_run(runs["paused"]).status == "paused", \
        "one click only asks"
    _button(at, "No, keep it").click().run()
    assert "**Cancel this run?**" not in _texts(at) and run_store.get_run(runs["paused"]).status == "paused"
    _button(at, "Cancel…").click().run()
    _button(at, "Yes, cancel the run").click().run()
    # flows.runs.cancel decides: a fresh heartbeat means a process waits for the answer and ends the run
    assert run_store.get_run(runs["paused"]).status in ("cancelling", "cancelled")
    assert task_store.get_task(runs["task"]).status == "cancelled", "a cancelled run's task closes"


def test_unknown_run_and_run_picker(make_app, runs):
    at = make_app(run="nope")
    at.run()
    at.switch_page("pages/run.py").run()
    assert "No run `nope`" in at.error[0].value
    at = make_app()
    at.run()
    at.switch_page("pages/run.py").run()
    labels = [p.proto.label for p in at.get("page_link")]
    assert any(runs["foreach"] in label for label in labels), "the latest runs to pick from"


# --------------------------------------------------------------------------------- inbox
def test_inbox_needs_a_sign_in_and_shows_only_visible_tasks(make_app, runs):
    at = make_app()
    at.run()
    at.switch_page("pages/inbox.py").run()
    assert "Sign in (in the sidebar) to see the tasks you can answer." in _texts(at)
    assert not at.dataframe

    at = make_app("bob")
    at.run()
    at.switch_page("pages/inbox.py").run()
    assert "0 open tasks you may see" in _texts(at), "bob is not in group legal"


def test_inbox_refuses_inline_then_claims_and_answers(make_app, runs):
    at = make_app("alice")
    at.run()
    at.switch_page("pages/inbox.py").run()
    assert not at.exception
    table = at.dataframe[0].value
    assert list(table["title"]) == ["Review ACME"] and list(table["definition"]) == ["review"]
    assert "Please decide about **ACME**." in _texts(at), "the rendered description"
    text = _texts(at)
    assert "What to review" in text and "**Party**  \n<small>The other party</small>" in text and "ACME" in text, \
        "the context field the task is about, labelled from the schema, as text"
    assert any(p.proto.label.startswith("Run review") for p in at.get("page_link")), "a link to the run"

    _button(at, "Submit answer").click().run()
    assert "Refused: the answer is not valid" in [e.value for e in at.error]
    assert "- decision: required" in _texts(at), "each problem is shown next to the form"
    assert task_store.get_task(runs["task"]).status == "pending" and run_store.get_run(runs["paused"]).status == "paused"

    _button(at, "Take this task").click().run()
    assert "You took task" in _texts(at)
    assert task_store.get_task(runs["task"]).claimed_by == "alice"

    at.selectbox(key=f"field:{runs['task']}:decision").set_value("approve")
    at.text_area(key=f"field:{runs['task']}:notes").input("fine")
    _button(at, "Submit answer").click().run()
    task = task_store.get_task(runs["task"])
    assert task.status == "completed" and task.answered_by == "alice" and task.answered_via == "dashboard"
    assert task.answer == {"decision": "approve", "notes": "fine"}
    # This seeded run has no Prefect flow run waiting: the dashboard says so rather than pretending.
    assert f"Answered task {task.id}, but the run was not resumed" in _texts(at)

    at.segmented_control(key="inbox_filter").set_value("completed").run()
    assert list(at.dataframe[0].value["title"]) == ["Review ACME"]
    assert "Answered by **alice** via dashboard" in _texts(at)


def test_require_login_setting_hides_every_page(make_app, people, monkeypatch):
    monkeypatch.setenv("ERGON_UI_REQUIRE_LOGIN", "1")
    at = make_app()
    at.run()
    assert "Sign in (in the sidebar) to see this dashboard." in _texts(at) and not at.dataframe
    at = make_app("alice")
    at.run()
    assert "No runs yet. Start one from **Definitions**" in _texts(at), "signed in, the Runs page (empty: it says what to do)"


# --------------------------------------------------------------------------------- artifacts
def test_artifacts_browse_render_and_compare(make_app, runs):
    other, _ = seed.paused_review("Globex")
    seed.artifacts(other.id, title="Bye", score=2)
    at = make_app()
    at.run()
    at.switch_page("pages/artifacts.py").run()
    assert not at.exception
    table = at.dataframe[0].value
    assert len(table) == 8 and set(table["key"]) == {"report", "scores", "lines", "trend"}
    assert set(table["definition"]) == {"review"}
    at.text_input(key="art_key").input("report").run()
    assert len(at.dataframe[0].value) == 2
    assert "All good." in _texts(at), "markdown rendered"
    at.text_input(key="art_key").input("").run()
    at.selectbox(key="art_type").set_value("table").run()
    assert list(at.dataframe[1].value["amount"]) == [1, 2], "a table artifact as a table"
    at.selectbox(key="art_type").set_value("chart").run()
    assert at.get("arrow_vega_lite_chart") or at.get("vega_lite_chart"), "a chart artifact drawn"

    at.selectbox(key="cmp_key").set_value("report").run()
    diff = "\n".join(c.value for c in at.code)
    assert "-# Hello" in diff and "+# Bye" in diff, "unified diff of the markdown"
    at.selectbox(key="cmp_key").set_value("scores").run()
    ops = next(f.value for f in at.dataframe if "op" in f.value.columns)
    assert list(ops["path"]) == ["/score"] and list(ops["run A"]) == ["1"] and list(ops["run B"]) == ["2"]


# --------------------------------------------------------------------------------- definitions
def test_definitions_diagnostics_graph_and_start_form(make_app, ui_defs, people):
    (ui_defs / "broken.yaml").write_text(ALL["boom.yaml"].replace("process: boom", "process: broken")
                                         .replace("transitions: [{to: done}]", "transitions: [{to: dne}]"))
    at = make_app()
    at.run()
    at.switch_page("pages/definitions.py").run()
    assert not at.exception
    summary = at.dataframe[0].value
    assert set(summary["definition"]) >= {"review", "doubler", "boom", "broken"}
    assert int(summary.loc[summary["definition"] == "broken", "errors"].iloc[0]) >= 1

    summary_kinds = dict(zip(summary["definition"], summary["kind"], strict=True))
    assert summary_kinds[at.selectbox(key="def_pick").value] in ("process", "pipeline"), "opens on something that runs"
    at.selectbox(key="def_pick").set_value("broken").run()
    assert any("unknown-target" in e.value and "dne" in e.value for e in at.error), "the checker's diagnostic"

    at.selectbox(key="def_pick").set_value("doubler").run()
    assert "Valid: no diagnostics." in _texts(at)
    assert '"start" [label="start", shape="parallelogram"' in _dot(at)
    assert "Sign in (in the sidebar) to start runs." in _texts(at)

    sign_in(at, "alice")
    at.run()
    labels = {t.label for t in at.text_area} | {s.label for s in at.selectbox}
    assert "Numbers *" in labels and "Mode" in labels, "field names in words, required marks, enums from context.schema"
    assert at.selectbox(key="input:doubler:mode").options == ["fast", "careful"]
    before = run_store.list_runs()[1]
    _button(at, "Start run").click().run()
    refused = "\n".join(e.value for e in at.error)
    assert "**Numbers** is required (Numbers to double)" in refused and "--input" not in refused, \
        "the form's words, not the command line's"
    at.text_area(key="input:doubler:numbers").input("x")
    _button(at, "Start run").click().run()
    assert "Numbers: line 1 is not a whole number" in "\n".join(e.value for e in at.error), "a list, one item per line"
    assert run_store.list_runs()[1] == before, "a refused start records nothing"

    at.text_area(key="input:doubler:numbers").input("5\n6")
    at.selectbox(key="input:doubler:mode").set_value("fast")
    _button(at, "Start run").click().run()
    started = run_store.list_runs(definition="doubler")[0][0]
    assert started.inputs == {"numbers": [5, 6], "mode": "fast"} and started.started_by == "alice"
    assert f"Run {started.id} started as a process on this host (pid " in _texts(at), "it says which way it went"
    assert _wait_ended(started.id) == "completed"
    assert run_store.get_run(started.id).context["results"][1]["output"] == {"doubled": 12}


def test_inbox_shows_the_labels_of_a_user_transition_choice(make_app, people):
    from flows.runtime.routing import choice_field
    from compiler.plan import PlanEdge

    run = run_store.create_run("review", content={}, context={}, started_by="alice")
    run_store.set_run_status(run.id, "paused")
    exits = [PlanEdge(source="draft", target="publish", kind="transition", trigger="user", label="Publish it"),
             PlanEdge(source="draft", target="archive", kind="transition", trigger="user")]
    task = task_store.create_task(run.id, "draft", "Route the draft", assignee="alice", fields=[choice_field(exits)])
    at = make_app("alice")
    at.run()
    at.switch_page("pages/inbox.py").run()
    assert not at.exception
    box = at.selectbox(key=f"field:{task.id}:_next_node")
    assert list(box.options) == ["Publish it", "archive"], "each exit shows its transition's label"
    box.set_value("publish")
    _button(at, "Submit answer").click().run()
    assert task_store.get_task(task.id).answer == {"_next_node": "publish"}, "the answer is the target id"


def test_a_supervised_run_shows_its_supervisors_commands_and_takes_messages(make_app, people):
    import yaml

    from flows.store import run_events

    run = run_store.create_run("boom", content=yaml.safe_load(ALL["boom.yaml"]), run_type="supervised",
                               started_by="alice")
    run_store.set_run_status(run.id, "running")
    run_events.add_event(run.id, "command", "transition_to", actor="supervisor", node_id="first",
                         args={"event": "node_completed", "args": {"node": "nowhere"}}, outcome="refused",
                         reason="no node 'nowhere' in `boom`")
    at = make_app("alice", run=run.id)
    at.run()
    at.switch_page("pages/run.py").run()
    assert "Supervisor" in [t.label for t in at.tabs]
    at.session_state["run_tabs"] = "Supervisor"
    at.run()
    assert not at.exception
    table = at.table[0].value
    assert list(table["command"]) == ["transition_to"] and list(table["verdict"]) == ["refused"]
    assert "no node 'nowhere'" in table["reason"].iloc[0]
    at.chat_input(key="sup_message").set_value("hold at the review").run()
    [message] = run_events.events_for_run(run.id, kind="message")
    assert (message.actor, message.args["text"], message.delivered_at) == ("alice", "hold at the review", None)
    run_store.set_run_status(run.id, "cancelled")


def test_an_admin_advances_a_failed_run_from_its_page_and_it_resumes(make_app, run_def, ui_defs, people):
    from flows.store import run_events

    failed = run_def(ALL, "boom")["run_id"]
    viewer = make_app("alice", run=failed)
    viewer.run()
    viewer.switch_page("pages/run.py").run()
    assert not [e for e in viewer.expander if e.label.startswith("Operator controls")], "admins only"
    at = make_app("root", run=failed)
    at.run()
    at.switch_page("pages/run.py").run()
    assert [e.label for e in at.expander if e.label.startswith("Operator controls")] == [
        "Operator controls · the run stopped at `explode`"]
    _button(at, "Explain").click().run()
    assert "`explode` is a tool node." in _texts(at) and "calls the tool `double_unless`" in _texts(at)
    at.session_state["operator"] = True
    at.run()
    at.radio(key="op_action").set_value("advance")
    at.selectbox(key="op_to").set_value("done")
    at.text_input(key="op_why").input("the double is not needed")
    _button(at, "Apply and resume").click().run()
    assert not at.exception
    assert "Advance recorded; the run resumes." in _texts(at)
    [row] = run_events.events_for_run(failed, kind="command")
    assert (row.name, row.actor, row.outcome, row.args["why"]) == ("advance", "root", "accepted", "the double is not needed")
    _wait_for(lambda: run_store.run_status(failed) == "completed")
    assert run_store.require_run(failed).outcome == "done"


def test_the_start_form_starts_a_supervised_run_with_a_message(prefect_api, make_app, ui_defs, people):
    from flows.store import run_events

    at = make_app("alice")
    at.run()
    at.switch_page("pages/definitions.py").run()
    at.selectbox(key="def_pick").set_value("boom").run()
    at.toggle(key="supervised:boom").set_value(True)
    at.text_input(key="message:boom").input("look at the doubling closely")
    _button(at, "Start run").click().run()
    started = run_store.list_runs(definition="boom")[0][0]
    assert started.run_type == "supervised" and started.started_by == "alice"
    [message] = run_events.events_for_run(started.id, kind="message")
    assert message.args["text"] == "look at the doubling closely" and message.actor == "alice"
    assert _wait_ended(started.id) == "failed"  # boom fails at `explode`; the offline supervisor lets it
    assert run_events.events_for_run(started.id, kind="message")[0].delivered_at is not None, "read at the start"
