"""Agents that delegate (workstreams), in real Prefect runs against the scripted OpenAI-compatible server.

The parent and each child talk to models of their own (``ws-lead``, ``ws-alpha``, ``ws-beta``),
so the server's log says what each was sent. Conversations whose turns depend on timing (a
parent waiting for its children) are answered by responders reading the request.
"""

from __future__ import annotations

import asyncio
import re
import time

import pytest

from workstream_defs import DELEGATING, ENV, text_of

pytestmark = pytest.mark.prefect

ALPHA = {"id": "alpha", "name": "Alpha", "instruction": "Find the answer.", "allowed_tools": ["think"],
         "model": "alpha", "deadline_seconds": 30}
#: beta's deadline runs from its launch, and on a busy SQLite-backed Prefect server its subflow may
#: start seconds late (a 503 retried after 2, then 4 s): 10 s leaves it time to be working by then
BETA = {"id": "beta", "name": "Beta", "instruction": "Take your time.", "allowed_tools": ["sleep"],
        "model": "beta", "deadline_seconds": 10}


def lead_responder(body: dict) -> dict:
    """Launch both, wait (answering `waiting`) until alpha's result and beta's timeout came, then report."""
    text = text_of(body)
    if not any(m.get("role") == "tool" for m in body["messages"]):
        return {"tool_calls": [{"name": "launch_workstream", "arguments": ALPHA},
                               {"name": "launch_workstream", "arguments": BETA}]}
    found = re.search(r'"result": \{"answer": (\d+)\}', text)
    if found and '"kind": "timeout"' in text:
        return {"json": {"report": f"alpha found {found.group(1)}"}}
    return {"content": "waiting"}


def beta_responder(body: dict) -> dict:
    """Short sleeps until told to wrap up, then one that outlasts the deadline."""
    text = text_of(body)
    if "wrap_up" in text:
        return {"tool_calls": [{"name": "sleep", "arguments": {"duration": 30}}]}
    turn = sum(1 for m in body["messages"] if m.get("role") == "tool")
    return {"tool_calls": [{"name": "sleep", "arguments": {"duration": 0.4 + turn / 1000}}]}


@pytest.fixture
def delegating(definitions, fake, monkeypatch):
    monkeypatch.setenv("ERGON_WORKSTREAM_MIN_DEADLINE_SECONDS", "1")
    for name, model in (("lead", "ws-lead"), ("alpha", "ws-alpha"), ("beta", "ws-beta")):
        (definitions / f"env_{name}.yaml").write_text(ENV.format(name=name, model=model, url=fake.url))
    return {"delegating.yaml": DELEGATING}


def test_a_parent_gets_one_childs_result_and_the_others_timeout(run_def, delegating, fake):
    from flows.store import visits as visit_store
    from flows.store import workstreams as workstream_store

    fake.respond("ws-lead", lead_responder)
    fake.script("ws-alpha", {"json": {"answer": 42}})
    fake.respond("ws-beta", beta_responder)
    started = time.monotonic()
    result = run_def(delegating, "delegating")
    elapsed = time.monotonic() - started

    assert result["status"] == "completed", result
    assert result["context"]["report"] == "alpha found 42"  # the parent's result uses the first child's
    assert elapsed >= 10, "the parent completed before beta's deadline"

    rows = {w.key: w for w in workstream_store.for_run(result["run_id"])}
    alpha, beta = rows["alpha"], rows["beta"]
    assert (alpha.status, alpha.end_reason, alpha.result, alpha.phase) == ("completed", "completed", {"answer": 42}, "done")
    assert (beta.status, beta.end_reason) == ("timeout", "deadline")
    assert "deadline of 10 s" in beta.error and beta.phase == "executing_tool" and beta.tool == "sleep"
    assert alpha.prefect_flow_run_id and beta.prefect_flow_run_id

    # the deadline's messages, as the scripted server saw them
    lead_texts = [text_of(r.body) for r in fake.for_model("ws-lead")]
    assert any('"kind": "deadline_warning", "deadline_percent": 75' in t for t in lead_texts)
    assert any('"kind": "deadline_warning", "deadline_percent": 90' in t for t in lead_texts)
    assert any("Your answer was not taken: workstreams still working: `beta`" in t for t in lead_texts)
    timeout_notice = next(t for t in lead_texts if '"kind": "timeout"' in t)
    assert '"last_progress": {"phase": "executing_tool"' in timeout_notice and '"tool": "sleep"' in timeout_notice
    beta_texts = [text_of(r.body) for r in fake.for_model("ws-beta")]
    assert any("Directive from the engine (wrap_up)" in t for t in beta_texts)
    assert not any("wrap_up" in t for t in beta_texts[:1])
    # a child sees its instruction, not the parent's conversation
    first_alpha = fake.for_model("ws-alpha")[0].body["messages"]
    assert "Find the answer." in text_of({"messages": first_alpha})
    assert "take your time over the rest" not in text_of({"messages": first_alpha}).lower()
    assert not any(t["function"]["name"].endswith("workstream") for t in fake.for_model("ws-alpha")[0].body["tools"])

    # the children's calls are theirs, not the parent visit's
    (lead_visit,) = [v for v in visit_store.visits_for_run(result["run_id"]) if v.node_id == "lead"]
    parent_calls = visit_store.llm_calls_for_run(result["run_id"], visit_id=lead_visit.id)
    assert parent_calls and all("ws-lead" in c.model for c in parent_calls)
    alpha_calls, _ = workstream_store.calls(alpha.id)
    beta_calls, beta_tools = workstream_store.calls(beta.id)
    assert len(alpha_calls) == 1 and alpha_calls[0].visit_id is None
    assert beta_calls and {t.tool for t in beta_tools} == {"sleep"}
    assert {alpha.parent_visit_id, beta.parent_visit_id} == {lead_visit.id}

    # each child is a Prefect flow run of its own, a subflow of the run's flow run
    from prefect.client.orchestration import get_client

    from flows.store import runs as run_store

    async def flow_runs():
        async with get_client() as client:
            found = [await client.read_flow_run(w.prefect_flow_run_id) for w in (alpha, beta)]
            parents = [(await client.read_task_run(fr.parent_task_run_id)).flow_run_id for fr in found]
            return found, parents

    (fr_alpha, fr_beta), parents = asyncio.run(flow_runs())
    assert fr_alpha.name == "workstream Alpha" and fr_beta.name == "workstream Beta"
    assert {str(p) for p in parents} == {run_store.get_run(result["run_id"]).prefect_flow_run_id}
    assert fr_alpha.state.type.value == "COMPLETED" and fr_beta.state.type.value == "CANCELLED"
    assert fr_beta.state.message.startswith("stopped at its deadline")


def test_offline_an_agent_that_may_delegate_runs_without_a_key(run_def):
    """No model configured: the offline model answers in one turn and launches nothing."""
    from flows.store import workstreams as workstream_store

    offline = DELEGATING.replace("    environment: lead\n", "").replace("process: delegating", "process: delegating_offline")
    result = run_def({"delegating_offline.yaml": offline}, "delegating_offline")
    assert result["status"] == "completed" and isinstance(result["context"]["report"], str)
    assert workstream_store.for_run(result["run_id"]) == []
