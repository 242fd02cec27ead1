"""The workstream tools in an agent loop without Prefect (children as bare asyncio tasks), against
the scripted OpenAI-compatible server: what a launch refuses, interactive children, steering,
terminating, and the offline model with the tools."""

from __future__ import annotations

import asyncio
import re

import pytest

from flows.llm.agent import AgentTask, run_agent
from flows.runtime.workstreams import Workstreams
from flows.tools import invoke as toolbox
from flows.tools.context import CURRENT, ToolContext
from flows.tools.errors import ToolError
from workstream_defs import text_of

SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"], "additionalProperties": False}
TOOLS = ["think", "sleep", "ask_user", "launch_workstream", "check_workstream", "list_workstreams",
         "get_workstream_result", "message_workstream", "steer_workstream", "terminate_workstream"]


@pytest.fixture
def envs(make_env):
    import flows.tools.builtins  # noqa: F401  (registers the built-ins)

    return {"lead": make_env("lead", ["u-lead"]), "expert": make_env("expert", ["u-expert"])}


@pytest.fixture
def lead_visit(run_id, visit):
    return visit("lead")


def hub_for(run_id, visit_id, envs) -> Workstreams:
    return Workstreams(run_id=run_id, visit_id=visit_id, node_id="lead", model="lead", tools=TOOLS, max_iterations=30,
                       environments=envs, started_by=None, process_name="p", guard=None, runner=None)


async def drive(run_id, visit_id, envs) -> tuple[dict, Workstreams]:
    """The parent's loop (model `u-lead`) with its workstreams, as the agent body runs it."""
    hub = hub_for(run_id, visit_id, envs)
    task = AgentTask(node_id="lead", prompt="Delegate.", process_name="p", process_description=None, writes=["n"],
                     result_schema=SCHEMA, context={}, tools=TOOLS, model="lead", run_id=run_id, visit_id=visit_id,
                     hooks=hub, max_iterations=30)
    token = CURRENT.set(ToolContext(run_id=run_id, visit_id=visit_id, workstreams=hub, environments=envs))
    try:
        result = await run_agent(task, toolbox=toolbox, environments=envs)
    finally:
        await hub.close()
        CURRENT.reset(token)
    return result.output, hub


def launch(**kw) -> dict:
    return {"id": "expert", "name": "Expert", "instruction": "Answer.", "allowed_tools": [], "model": "expert", **kw}


def test_a_launch_refuses_what_the_parent_may_not_give(run_id, lead_visit, envs, monkeypatch):
    monkeypatch.delenv("ERGON_WORKSTREAM_MIN_DEADLINE_SECONDS", raising=False)

    async def refusals() -> list[str]:
        hub = hub_for(run_id, lead_visit, envs)
        found = []
        for args in (launch(allowed_tools=["http_request"]),      # not the parent's
                     launch(allowed_tools=["launch_workstream"]),  # children do not delegate in turn
                     launch(allowed_tools=["ask_user"]),           # nor ask a person
                     launch(model="openai/gpt-4o"),                 # a model that is not the run's
                     launch(deadline_seconds=10),                   # under the 30 s minimum
                     launch(deadline_seconds=3600),
                     launch(id="has space"),
                     launch(instruction=" ")):
            try:
                await hub.launch(**{"context": None, "deadline_seconds": 300, "interactive": False, **args})
            except ToolError as exc:
                found.append(str(exc))
        return found

    messages = asyncio.run(refusals())
    assert len(messages) == 8
    assert "`http_request` is not one of this agent's tools; a workstream may have: think, sleep" in messages[0]
    assert "cannot have `launch_workstream`" in messages[1] and "cannot have `ask_user`" in messages[2]
    assert "environments: expert, lead" in messages[3]
    assert "between 30 and 1800" in messages[4] and "between 30 and 1800" in messages[5]
    assert "ASCII letters" in messages[6] and "must say what" in messages[7]


def test_an_interactive_child_answers_follow_ups_and_ends_when_its_parent_does(run_id, lead_visit, envs, fake):
    from flows.store import workstreams as workstream_store

    def lead(body: dict) -> dict:
        text = text_of(body)
        replies = re.findall(r'\[reply\] `expert`.*"summary": "([^"]*)"', text)
        if not any(m.get("role") == "tool" for m in body["messages"]):
            return {"tool_calls": [{"name": "launch_workstream", "arguments": launch(interactive=True)}]}
        asked = any(m.get("name") == "message_workstream" for m in body["messages"] if m.get("role") == "tool")
        if replies == ["first"] and not asked:
            return {"tool_calls": [{"name": "message_workstream",
                                    "arguments": {"launch_id": "expert", "message": "And then?"}}]}
        if len(replies) == 2:
            return {"json": {"n": len(replies)}}
        return {"content": "waiting"}

    fake.respond("u-lead", lead)
    fake.script("u-expert", {"content": "first"}, {"content": "second"})
    output, hub = asyncio.run(drive(run_id, lead_visit, envs))

    assert output == {"n": 2}  # taken while the interactive child waited for more: it does not hold the parent
    (row,) = workstream_store.for_visit(lead_visit)
    assert (row.status, row.end_reason, row.summary, row.interactive) == ("canceled", "parent_ended", "second", True)
    second = fake.for_model("u-expert")[1].body["messages"]
    assert [m["role"] for m in second] == ["system", "user", "assistant", "user"]
    assert "And then?" in second[-1]["content"] and "interactive" in second[0]["content"]


def test_steering_reaches_the_child_and_terminating_stops_it(run_id, lead_visit, envs, fake):
    from flows.store import workstreams as workstream_store

    def lead(body: dict) -> dict:
        text = text_of(body)
        tools_done = [m.get("name") for m in body["messages"] if m.get("role") == "tool"]
        if not tools_done:
            return {"tool_calls": [
                {"name": "launch_workstream", "arguments": launch(id="steered", allowed_tools=["sleep"])},
                {"name": "launch_workstream", "arguments": launch(id="stuck", allowed_tools=["sleep"])}]}
        if "steer_workstream" not in tools_done:
            return {"tool_calls": [{"name": "steer_workstream", "arguments": {
                "launch_id": "steered", "command": "add_constraint", "message": "Only the last 3 years."}}]}
        if "terminate_workstream" not in tools_done:
            return {"tool_calls": [{"name": "terminate_workstream", "arguments": {"launch_id": "stuck"}}]}
        if "[completed] `steered`" in text:
            return {"json": {"n": 1}}
        return {"content": "waiting"}

    def expert(body: dict) -> dict:
        text = text_of(body)
        if "Workstream `stuck`" in text:
            return {"tool_calls": [{"name": "sleep", "arguments": {"duration": 60}}]}
        if "(add_constraint): Only the last 3 years." in text:
            return {"content": "constrained"}
        turn = sum(1 for m in body["messages"] if m.get("role") == "tool")
        return {"tool_calls": [{"name": "sleep", "arguments": {"duration": 0.2 + turn / 1000}}]}

    fake.respond("u-lead", lead)
    fake.respond("u-expert", expert)
    output, hub = asyncio.run(drive(run_id, lead_visit, envs))

    assert output == {"n": 1}
    rows = {w.key: w for w in workstream_store.for_visit(lead_visit)}
    assert (rows["steered"].status, rows["steered"].summary) == ("completed", "constrained")
    assert (rows["stuck"].status, rows["stuck"].end_reason, rows["stuck"].tool) == ("canceled", "terminated", "sleep")
    terminated = [m for r in fake.for_model("u-lead") for m in r.body["messages"]
                  if m.get("role") == "tool" and m.get("name") == "terminate_workstream"]
    assert '"status": "canceled"' in terminated[-1]["content"] and '"tool": "sleep"' in terminated[-1]["content"]


def test_checking_a_child_repeatedly_is_waiting_not_a_loop(run_id, lead_visit, envs, fake):
    check = {"tool_calls": [{"name": "check_workstream", "arguments": {"launch_id": "expert"}}]}
    fake.script("u-lead", {"tool_calls": [{"name": "launch_workstream", "arguments": launch()}]}, check, check, check,
                {"json": {"n": 4}})
    fake.respond("u-lead", lambda body: {"json": {"n": 4}})  # asked again if the answer was held
    fake.script("u-expert", {"content": "done", "delay": 0.3})
    output, hub = asyncio.run(drive(run_id, lead_visit, envs))
    assert output == {"n": 4}
    described = [m for m in fake.for_model("u-lead")[2].body["messages"] if m.get("name") == "check_workstream"][0]
    for key in ('"status"', '"phase"', '"iteration"', '"deadline_percent"', '"remaining_seconds"', '"latest_progress"'):
        assert key in described["content"]


def test_the_offline_model_runs_an_agent_that_may_delegate(run_id, lead_visit):
    import flows.tools.builtins  # noqa: F401
    from flows.store import visits as visit_store
    from flows.store import workstreams as workstream_store

    async def go() -> dict:
        hub = hub_for(run_id, lead_visit, {})
        hub.model = None
        task = AgentTask(node_id="lead", prompt="Delegate.", process_name="p", process_description=None, writes=["n"],
                         result_schema=SCHEMA, context={}, tools=TOOLS, model=None, run_id=run_id, visit_id=lead_visit,
                         hooks=hub)
        token = CURRENT.set(ToolContext(run_id=run_id, visit_id=lead_visit, workstreams=hub))
        try:
            return (await run_agent(task, toolbox=toolbox)).output
        finally:
            await hub.close()
            CURRENT.reset(token)

    output = asyncio.run(go())
    assert isinstance(output["n"], int)  # one turn, schema-valid: the offline model never calls a tool
    (call,) = visit_store.llm_calls_for_run(run_id, visit_id=lead_visit)
    assert call.offline and "launch_workstream" in call.messages[0]["content"]
    assert workstream_store.for_visit(lead_visit) == []
