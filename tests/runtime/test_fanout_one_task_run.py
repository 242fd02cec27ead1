"""A foreach with `task_runs: node`: one Prefect task run for the node, every item still a visit
in Ergon's store — checkpointed, retried by its body's policy, reused on resume — and the node's
progress on its task run as a Prefect progress artifact."""

from __future__ import annotations

import asyncio
import time

import pytest

pytestmark = pytest.mark.prefect

FAN = """
format_version: 1
process: {name}
initial: fan
context:
  schema: {{type: object, properties: {{items: {{type: array}}, results: {{type: array}}}}}}
  initial: {{items: {items}}}
nodes:
  fan:
    type: foreach
    foreach: items
    as: it
    item_id: "{{{{ it.k }}}}"
    max_concurrency: {window}
    task_runs: node
    node:
      type: tool
      tool: flaky
      input: {{key: "{{{{ it.k }}}}", failures: "{{{{ it.f }}}}"}}
      {retry}
    collect: results
    failure_policy: {policy}
    writes: [results]
    transitions: [{{to: done}}]
  done: {{type: final}}
"""


def _definition(name: str, items: list[dict], *, window: int = 4, retry: str = "", policy: str = "fail_fast") -> str:
    return FAN.format(name=name, items=items, window=window, retry=retry, policy=policy)


def _flow_run_records(flow_run_id: str) -> tuple[list, list]:
    """(task runs, artifacts) Prefect has for a flow run, once its task runs are final."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId, FlowRunFilter, FlowRunFilterId

    async def read() -> tuple[list, list]:
        async with get_client() as client:
            runs = await client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id])))
            arts = await client.read_artifacts(
                artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id])))
            return runs, arts

    deadline = time.monotonic() + 30
    while True:
        runs, arts = asyncio.run(read())
        settled = runs and all(r.state and r.state.is_final() for r in runs) and arts
        if settled or time.monotonic() > deadline:
            return runs, arts
        time.sleep(0.5)


def test_the_items_run_in_one_task_run_and_are_each_recorded(run_def):
    from flows.store import runs as run_store
    from flows.store import visits as visit_store

    items = [{"k": f"one-{i}", "f": 0} for i in range(12)]
    result = run_def({"one_run.yaml": _definition("one_run", items)}, "one_run")
    assert (result["status"], result["outcome"]) == ("completed", "done"), result
    assert result["context"]["results"] == [{"attempts": 1}] * 12

    visits = visit_store.visits_for_run(result["run_id"])
    parent = [v for v in visits if v.node_id == "fan" and v.parent_visit_id is None]
    children = [v for v in visits if v.parent_visit_id is not None]
    assert [v.status for v in parent] == ["completed"]
    assert sorted(v.item_key for v in children) == sorted(i["k"] for i in items)
    assert all(v.status == "completed" and v.output == {"attempts": 1} for v in children)

    run = run_store.get_run(result["run_id"])
    task_runs, artifacts = _flow_run_records(run.prefect_flow_run_id)
    assert [r.name for r in task_runs] == ["fan"], "the foreach is one Prefect task run, its items none"
    fan = task_runs[0]
    assert {str(v.prefect_task_run_id) for v in children} == {str(fan.id)}, "every item records the node's task run"
    progress = [a for a in artifacts if a.type == "progress"]
    assert len(progress) == 1 and str(progress[0].task_run_id) == str(fan.id)
    assert progress[0].data == 100.0
    assert "12 of 12 items ended" in (progress[0].description or "")


def test_a_failed_item_is_retried_by_its_bodys_policy(run_def):
    from flows.store import visits as visit_store
    from testing_tools import _ledger

    items = [{"k": "rt-a", "f": 0}, {"k": "rt-b", "f": 2}, {"k": "rt-c", "f": 0}]
    retry = "retry: {retries: 2, delay_seconds: 0.05, retry_on: [connection]}"
    result = run_def({"item_retry.yaml": _definition("item_retry", items, retry=retry)}, "item_retry")
    assert result["status"] == "completed", result
    assert result["context"]["results"] == [{"attempts": 1}, {"attempts": 3}, {"attempts": 1}]
    assert _ledger("flaky-rt-b").read_text() == "3"
    attempts = sorted((v.item_key, v.attempt, v.status) for v in visit_store.visits_for_run(result["run_id"])
                      if v.item_key == "rt-b")
    assert attempts == [("rt-b", 1, "failed"), ("rt-b", 2, "failed"), ("rt-b", 3, "completed")]


def test_collect_errors_keeps_going_and_fail_fast_stops(run_def):
    items = [{"k": f"ce-{i}", "f": 5 if i == 1 else 0} for i in range(4)]
    kept = run_def({"keep_going.yaml": _definition("keep_going", items, window=1, policy="collect_errors")}, "keep_going")
    assert kept["status"] == "completed", kept
    assert [r is None for r in kept["context"]["results"]] == [False, True, False, False]

    from flows.store import runs as run_store

    items = [{"k": f"ff-{i}", "f": 5 if i == 1 else 0} for i in range(4)]
    stopped = run_def({"stop_early.yaml": _definition("stop_early", items, window=1)}, "stop_early")
    assert stopped["status"] == "failed"
    assert "item `ff-1` failed" in stopped["error"]
    # the progress artifact ends with the counts as the fan-out stopped, the failure included
    _, artifacts = _flow_run_records(run_store.get_run(stopped["run_id"]).prefect_flow_run_id)
    [progress] = [a for a in artifacts if a.type == "progress"]
    assert "2 of 4 items ended, 1 failed" in (progress.description or ""), progress.description


def test_resume_reuses_the_completed_items(run_def):
    from flows import runs
    from flows.store import visits as visit_store
    from testing_tools import _ledger

    items = [{"k": "rs-a", "f": 0}, {"k": "rs-b", "f": 1}, {"k": "rs-c", "f": 0}]
    first = run_def({"fan_again.yaml": _definition("fan_again", items, window=1)}, "fan_again")
    assert first["status"] == "failed", first
    resumed = runs.resume(first["run_id"])
    assert (resumed.status, resumed.outcome) == ("completed", "done"), resumed.error
    assert resumed.context["results"] == [{"attempts": 1}, {"attempts": 2}, {"attempts": 1}]
    assert [_ledger(f"flaky-{k}").read_text() for k in ("rs-a", "rs-b", "rs-c")] == ["1", "2", "1"], \
        "an item completed before the failure ran again"
    parents = [v for v in visit_store.visits_for_run(first["run_id"]) if v.node_id == "fan"]
    assert [v.status for v in parents] == ["completed"]


def test_the_nodes_retry_runs_only_the_items_that_did_not_complete(run_def):
    """The node's own `retry` is its one task run's: a second attempt keeps the items done."""
    from testing_tools import _ledger

    items = [{"k": "nr-a", "f": 0}, {"k": "nr-b", "f": 1}, {"k": "nr-c", "f": 0}]
    text = _definition("node_retry", items, window=1).replace(
        "    task_runs: node\n", "    task_runs: node\n    retry: {retries: 1, delay_seconds: 0}\n")
    result = run_def({"node_retry.yaml": text}, "node_retry")
    assert result["status"] == "completed", result
    assert [_ledger(f"flaky-{k}").read_text() for k in ("nr-a", "nr-b", "nr-c")] == ["1", "2", "1"]
