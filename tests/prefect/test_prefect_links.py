"""Ergon and Prefect's UI point at each other: a real run's artifacts are Prefect artifacts on its
flow run (and on the task run of the visit that wrote them), its visits know their task runs,
and the run's page in the dashboard links the flow run and each visit's task run."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.prefect

APP = Path(__file__).resolve().parents[2] / "ui" / "app.py"

WRITER = """
format_version: 1
process: Report Writer
initial: report
context:
  schema: {type: object, properties: {}}
nodes:
  report:
    type: tool
    tool: write_artifact
    input: {key: out/report.md, content: "# Quarterly report\\n\\nAll good.", description: The summary}
    transitions: [{to: lines}]
  lines:
    type: tool
    tool: write_artifact
    input: {key: lines, type: table, content: [{item: pens, amount: 3}, {item: ink, amount: 1}]}
    transitions: [{to: totals}]
  totals:
    type: tool
    tool: write_artifact
    input: {key: totals, type: json, content: {total: 4}}
    transitions: [{to: trend}]
  trend:
    type: tool
    tool: write_artifact
    input: {key: trend, type: chart, content: {data: [{day: mon, n: 1}], x: day, y: n}}
    transitions: [{to: again}]
  again:
    type: tool
    tool: write_artifact
    input: {key: out/report.md, content: "# Quarterly report, v2"}
    transitions: [{to: done}]
  done: {type: final}
"""


def _prefect_artifacts(flow_run_id: str) -> list:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId

    with get_client(sync_client=True) as client:
        return client.read_artifacts(artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(
            any_=[flow_run_id])))


def _task_runs(flow_run_id: str) -> dict[str, str]:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    with get_client(sync_client=True) as client:
        rows = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id])))
    return {str(t.id): t.name for t in rows}


def test_a_runs_artifacts_are_prefect_artifacts_on_its_flow_run(run_def, monkeypatch):
    from flows.store import runs as run_store
    from flows.store import visits as visit_store

    monkeypatch.setenv("ERGON_UI_URL", "http://dashboard.test:8501")
    result = run_def({"writer.yaml": WRITER}, "Report Writer")
    assert result["status"] == "completed", result
    run = run_store.get_run(result["run_id"])
    visits = {v.node_id: v for v in visit_store.visits_for_run(run.id)}
    # Prefect records task runs from the events its client sends, a moment after the flow ends
    wanted = {node: visits[node].prefect_task_run_id for node in ("report", "lines", "totals", "trend", "again")}
    deadline = time.monotonic() + 30
    while not set(wanted.values()) <= set(task_runs := _task_runs(run.prefect_flow_run_id)) and time.monotonic() < deadline:
        time.sleep(0.3)
    for node, task_run_id in wanted.items():
        assert task_run_id in task_runs, f"visit {node} knows its Prefect task run"

    published = sorted(_prefect_artifacts(run.prefect_flow_run_id), key=lambda a: a.created)
    assert [(a.key, a.type) for a in published] == [
        ("report-writer-out-report-md", "markdown"), ("report-writer-lines", "table"),
        ("report-writer-totals", "markdown"), ("report-writer-trend", "markdown"),  # a link is stored as markdown
        ("report-writer-out-report-md", "markdown"),
    ]
    report, lines, totals, trend, again = published
    assert report.data == "# Quarterly report\n\nAll good." and again.data == "# Quarterly report, v2"
    assert report.task_run_id is not None and str(report.task_run_id) == visits["report"].prefect_task_run_id
    assert json.loads(lines.data) == [{"item": "pens", "amount": 3}, {"item": "ink", "amount": 1}]
    assert '"total": 4' in totals.data and totals.data.startswith("```json")
    back = f"http://dashboard.test:8501/run?run={run.id}"
    assert back in trend.data, "a chart is a link back to the dashboard"
    assert report.description.startswith("The summary · Ergon artifact `out/report.md` v1 (markdown)")
    assert f"[open the run in Ergon]({back})" in report.description
    assert "v2" in again.description


def test_the_run_page_links_the_flow_run_and_each_visits_task_run(run_def, monkeypatch):
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    from flows.store import runs as run_store
    from flows.store import visits as visit_store

    monkeypatch.delenv("PREFECT_UI_URL", raising=False)
    result = run_def({"writer.yaml": WRITER}, "Report Writer")
    run = run_store.get_run(result["run_id"])
    report = next(v for v in visit_store.visits_for_run(run.id) if v.node_id == "report")
    ui = run_store_ui_base()
    st.cache_resource.clear()
    at = AppTest.from_file(str(APP), default_timeout=60)
    at.query_params["run"] = run.id
    at.session_state["inspect_node"] = "report"
    at.run()
    at.switch_page("pages/run.py").run()
    assert not at.exception, at.exception
    texts = [m.value for m in at.markdown] + [c.value for c in at.caption]
    assert any(f"]({ui}/runs/flow-run/{run.prefect_flow_run_id})" in t for t in texts), \
        "the run's page links its Prefect flow run"
    assert any(f"]({ui}/runs/task-run/{report.prefect_task_run_id})" in t for t in texts), \
        "the inspected node's visit links its Prefect task run"

    monkeypatch.setenv("PREFECT_UI_URL", "https://prefect.example/ui")
    at.run()
    texts = [m.value for m in at.markdown]
    assert any(f"](https://prefect.example/ui/runs/flow-run/{run.prefect_flow_run_id})" in t for t in texts)


def run_store_ui_base() -> str:
    """The UI address of this session's Prefect server: its API address without ``/api``."""
    import os

    return os.environ["PREFECT_API_URL"].removesuffix("/api")
