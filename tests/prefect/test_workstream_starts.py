"""Workstreams launched together: each starts as a Prefect subflow of the visit's flow run, one
after the other (``run_workstream`` holds its start lock until the child before is running), and
then all run at once.

The speed side (503s retried, launch → last child running) is measured by
``benchmarks/workstream_starts.py``, not here.
"""

from __future__ import annotations

import asyncio

import pytest

pytestmark = pytest.mark.prefect


def test_children_launched_at_once_each_get_a_subflow_and_run_side_by_side(prefect_api):
    from prefect import flow, task
    from prefect.client.orchestration import get_client
    from prefect.runtime import flow_run as current_flow_run

    from flows.prefect.workstreams import run_workstream

    began: dict[str, str | None] = {}
    everyone = asyncio.Event()

    def body_for(key: str):
        async def body(flow_run_id: str | None) -> dict:
            began[key] = flow_run_id
            if len(began) == 4:
                everyone.set()
            # none ends before all four run: a start lock held past a child's start would hang here
            await asyncio.wait_for(everyone.wait(), 60)
            return {"status": "completed" if key != "d" else "failed", "error": None if key != "d" else "no luck",
                    "summary": key}

        return body

    @task(persist_result=False)
    async def agent_visit() -> list:
        return await asyncio.gather(*(run_workstream(k, f"launch-{k}", body_for(k)) for k in "abcd"))

    @flow(persist_result=False)
    async def parent_run() -> tuple[str, list]:
        return str(current_flow_run.id), await agent_visit()

    async def read(flow_run_ids: list) -> list:
        async with get_client() as client:
            runs = [await client.read_flow_run(i) for i in flow_run_ids]
            return [(fr, (await client.read_task_run(fr.parent_task_run_id)).flow_run_id) for fr in runs]

    parent_id, states = asyncio.run(parent_run())
    assert [s.type.value for s in states] == ["COMPLETED", "COMPLETED", "COMPLETED", "FAILED"]
    assert states[3].message == "no luck"
    assert sorted(began) == list("abcd") and len(set(began.values())) == 4
    children = asyncio.run(read([began[k] for k in "abcd"]))
    assert [fr.name for fr, _ in children] == [f"workstream {k}" for k in "abcd"]
    assert {str(parent) for _, parent in children} == {parent_id}  # subflows of the visit's flow run
