"""Node visits carry their type and lane as tags in Prefect's records, and Prefect's tag
concurrency limits still hold for them (see flows/tagging.py for why most visits write their tags
onto the record instead of asking Prefect for a lease)."""

from __future__ import annotations

import asyncio
import time
from datetime import datetime

import pytest

pytestmark = pytest.mark.prefect

BRANCH = """
format_version: 1
process: {name}
initial: both
nodes:
  both:
    type: branch
    branches:
      - {{id: one, node: {{type: tool, tool: mark, input: {{name: one, seconds: 0.6}}, metadata: {{lane: serial}}}}}}
      - {{id: two, node: {{type: tool, tool: mark, input: {{name: two, seconds: 0.6}}, metadata: {{lane: serial}}}}}}
    transitions: [{{to: done}}]
  done: {{type: final}}
"""


def _prefect_task_runs(flow_run_id: str, wanted: set[str]) -> dict[str, set[str]]:
    """{task run name: tags} of a flow run, once Prefect has recorded ``wanted`` with their tags
    (task runs reach its database through events, a moment after the run)."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    async def read() -> dict[str, set[str]]:
        async with get_client() as client:
            runs = await client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id])))
            return {r.name: set(r.tags) for r in runs if r.state and r.state.is_final()}

    deadline = time.monotonic() + 30
    got: dict[str, set[str]] = {}
    while time.monotonic() < deadline:
        got = asyncio.run(read())
        if wanted <= set(got):
            break
        time.sleep(0.5)
    return got


def _intervals(run_id: str) -> list[tuple[datetime, datetime]]:
    from flows.store import visits as visit_store

    return sorted((v.started_at, v.ended_at) for v in visit_store.visits_for_run(run_id) if v.item_key in ("one", "two"))


def _overlap(intervals: list[tuple[datetime, datetime]]) -> bool:
    (_, end_first), (start_second, _) = intervals
    return start_second < end_first


def _set_limit(name: str, limit: int | None) -> None:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import GlobalConcurrencyLimitCreate

    async def go() -> None:
        async with get_client() as client:
            if limit is None:
                await client.delete_global_concurrency_limit_by_name(name)
            else:
                await client.create_global_concurrency_limit(GlobalConcurrencyLimitCreate(name=name, limit=limit))

    asyncio.run(go())


def test_visits_carry_type_and_lane_tags_in_prefect(run_def):
    from flows.store import runs as run_store

    text = """
format_version: 1
process: tagged
initial: first
nodes:
  first: {type: tool, tool: noop, metadata: {lane: intake}, transitions: [{to: second}]}
  second: {type: condition, branches: [{to: done, default: true}]}
  done: {type: final}
"""
    result = run_def({"tagged.yaml": text}, "tagged")
    assert result["status"] == "completed", result
    run = run_store.get_run(result["run_id"])
    got = _prefect_task_runs(run.prefect_flow_run_id, {"first", "second"})
    assert got.get("first") == {"tool", "lane:intake"}, got
    assert got.get("second") == {"condition"}, got


def test_a_prefect_tag_concurrency_limit_holds_for_tagged_visits(run_def):
    """Without a limit the two arms of the branch overlap; with a `lane:serial` limit of 1 (made
    while no run is in progress) Prefect runs them one after the other — and still tags them."""
    from flows.store import runs as run_store

    free = run_def({"free.yaml": BRANCH.format(name="free")}, "free")
    assert free["status"] == "completed", free
    assert _overlap(_intervals(free["run_id"])), "the branch's arms did not run in parallel: the test proves nothing"

    _set_limit("tag:lane:serial", 1)
    try:
        limited = run_def({"limited.yaml": BRANCH.format(name="limited")}, "limited")
    finally:
        _set_limit("tag:lane:serial", None)
    assert limited["status"] == "completed", limited
    assert not _overlap(_intervals(limited["run_id"]))
    run = run_store.get_run(limited["run_id"])
    got = _prefect_task_runs(run.prefect_flow_run_id, {"both[one]", "both[two]"})
    assert got.get("both[one]") == {"tool", "lane:serial"}, got
