"""Skills in an agent's conversation, against the fake OpenAI-compatible server: the model learns a
skill with `learn_<skill>`, is offered the skill's tools from the next request on, and calls them;
`list_tools` says what it may call now; a dynamic skill's instructions are rendered when learned.

The loop-level tests run :func:`flows.llm.agent.run_agent` with the toolbox the agent body gives
it; the last one runs a whole process (definitions folder with `skills/`, compiled, run on
Prefect) and reads what was recorded."""

from __future__ import annotations

import asyncio
import json

import pytest
from fake_openai import ENVIRONMENT as ENV

from compiler.skills import parse_skill
from flows.llm.agent import AgentTask, run_agent
from flows.tools import REGISTRY, tool
from flows.tools.skills import OFFER, SkillToolbox, offer_for, register

SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"], "additionalProperties": False}

COUNTING = """\
---
title: Counting
description: Count up by one, the house way
tools: [sk_increment]
related_tools: [think]
---
Always count with `sk_increment`; never add in your head.
"""

DYNAMIC = """\
---
description: Instructions written for the agent that learns them
tools: [sk_increment]
dynamic: true
---
You work in `{{ process }}` as `{{ node }}`.
{% if "sk_increment" in tools %}Count with `sk_increment`.{% endif %}
Tools you have now: {{ tools | join(", ") }}. Skill: {{ skill.title }}.
"""


@tool(name="sk_increment")
def sk_increment(value: int) -> dict:
    """Add one to a number."""
    return {"value": value + 1}


def _skill(text: str, name: str):
    parsed = parse_skill(text, f"skills/{name}.md")
    assert parsed.skill is not None, parsed.findings
    return parsed.skill


@pytest.fixture
def envs(make_env):
    import flows.tools.builtins  # noqa: F401  (think, list_tools)

    register(_skill(COUNTING, "counting"))
    register(_skill(DYNAMIC, "briefing"))
    yield {"fake": make_env("fake", ["skills"])}
    for name in ("learn_counting", "learn_briefing"):
        REGISTRY.pop(name, None)


def run(tools: list[str], envs, **ids) -> object:
    """Run the loop as the agent body does: with the node's offer set and its toolbox (``ids``:
    the run and visit its model calls are recorded under)."""
    task = AgentTask(node_id="counter", prompt="Count from 41.", process_name="tally", process_description=None,
                     writes=["n"], result_schema=SCHEMA, context={}, tools=tools, model="fake", **ids)
    offer = offer_for(tools, process="tally", node="counter")
    assert offer is not None

    async def go():
        token = OFFER.set(offer)
        try:
            return await run_agent(task, toolbox=SkillToolbox(offer), environments=envs)
        finally:
            OFFER.reset(token)

    return asyncio.run(go())


def offered(request) -> list[str]:
    return [t["function"]["name"] for t in request.body.get("tools", [])]


def tool_replies(request) -> dict[str, object]:
    """The tool results the request carries, by tool name (the last of each)."""
    return {m["name"]: json.loads(m["content"]) for m in request.body["messages"] if m["role"] == "tool"}


def test_a_learned_skill_unlocks_its_tools_for_the_rest_of_the_conversation(fake, envs):
    fake.script("skills",
                {"tool_calls": [{"name": "learn_counting", "arguments": {"context": "I must count"}}]},
                {"tool_calls": [{"name": "sk_increment", "arguments": {"value": 41}}]},
                {"json": {"n": 42}})
    result = run(["think", "learn_counting"], envs)
    assert result.output == {"n": 42}
    first, second, third = fake.for_model("skills")
    # before learning: the learn tool, not the skill's tool
    assert offered(first) == ["think", "learn_counting"]
    learn = next(t for t in first.body["tools"] if t["function"]["name"] == "learn_counting")["function"]
    assert learn["description"] == "[Skill] Count up by one, the house way"
    # the learn call answered with the instructions; the next request offers the tool, and it ran
    reply = tool_replies(second)["learn_counting"]
    assert reply["instructions"] == "Always count with `sk_increment`; never add in your head."
    assert reply["unlocked_tools"] == ["sk_increment"]
    assert offered(second) == ["think", "learn_counting", "sk_increment"]
    assert tool_replies(third)["sk_increment"] == {"value": 42}
    assert offered(third) == offered(second)
    # the agent was told how skills work
    assert "`learn_<skill>` tool returns the skill's instructions" in first.body["messages"][0]["content"]


def test_a_skill_tool_called_before_the_skill_is_learned_is_refused_not_run(fake, envs):
    fake.script("skills",
                {"tool_calls": [{"name": "sk_increment", "arguments": {"value": 1}}]},
                {"json": {"n": 0}})
    result = run(["learn_counting"], envs)
    assert result.tool_calls == 0
    reply = tool_replies(fake.for_model("skills")[1])["sk_increment"]
    assert "not available to this agent" in reply["error"]


def test_a_resumed_visit_learns_its_skills_again_and_reuses_every_recorded_answer(fake, envs, run_id, visit):
    """The offer is not stored: the visit that redoes an unfinished one replays its recorded answers,
    learning the skill again before the same turn, so each request (tools offered included) is the
    recorded one and no model call is made again."""
    fake.script("skills",
                {"tool_calls": [{"name": "learn_counting", "arguments": {}}]},
                {"tool_calls": [{"name": "sk_increment", "arguments": {"value": 41}}]},
                {"json": {"n": 42}})
    first = run(["think", "learn_counting"], envs, run_id=run_id, visit_id=visit("counter"))
    assert len(fake.for_model("skills")) == 3
    again = run(["think", "learn_counting"], envs, run_id=run_id, visit_id=visit("counter"))  # the visit left unfinished
    assert again.output == first.output == {"n": 42}
    assert len(fake.for_model("skills")) == 3, "every answer was reused, the unlocked tool's request included"
    assert [r.raw.get("reused_from") is not None for r in again.responses] == [True, True, True]


def test_list_tools_says_what_may_be_called_now_and_what_may_be_learned(fake, envs):
    fake.script("skills",
                {"tool_calls": [{"name": "list_tools", "arguments": {}}]},
                {"tool_calls": [{"name": "learn_counting", "arguments": {}}]},
                {"tool_calls": [{"name": "list_tools", "arguments": {"grep": "count|increment"}}]},
                {"json": {"n": 1}})
    run(["think", "list_tools", "learn_counting", "learn_briefing"], envs)
    requests = fake.for_model("skills")
    before = tool_replies(requests[1])["list_tools"]
    assert [t["name"] for t in before["tools"]] == ["think", "list_tools"]
    assert before["tools"][0]["description"] == REGISTRY["think"].description
    assert before["skills"] == [
        {"name": "learn_counting", "title": "Counting", "description": "Count up by one, the house way",
         "learned": False, "unlocks": ["sk_increment"], "related_tools": ["think"]},
        {"name": "learn_briefing", "title": "briefing", "description": "Instructions written for the agent that learns them",
         "learned": False, "unlocks": ["sk_increment"], "related_tools": []}]
    after = tool_replies(requests[3])["list_tools"]  # filtered by grep, after learning
    assert [t["name"] for t in after["tools"]] == ["sk_increment"]
    assert [(s["name"], s["learned"]) for s in after["skills"]] == [("learn_counting", True)]


def test_dynamic_instructions_are_rendered_for_the_agent_that_learns_them(fake, envs):
    fake.script("skills", {"tool_calls": [{"name": "learn_briefing", "arguments": {}}]}, {"json": {"n": 1}})
    run(["think", "learn_briefing"], envs)
    reply = tool_replies(fake.for_model("skills")[1])["learn_briefing"]
    assert reply["instructions"] == (
        "You work in `tally` as `counter`.\n"
        "Count with `sk_increment`.\n"
        "Tools you have now: learn_briefing, sk_increment, think. Skill: briefing.")


def test_learn_and_list_tools_outside_an_agent_loop_are_refused():
    from flows.tools.errors import ToolError
    from flows.tools.invoke import invoke

    import flows.tools.builtins  # noqa: F401

    for name in ("list_tools", "learn_workstreams"):
        with pytest.raises(ToolError, match="inside an agent's tool loop"):
            asyncio.run(invoke(name, {}))


SKILL_FILE = """\
---
description: Count up by one with the counter tool
tools: [increment]
---
Count with `increment`: it takes `value` and returns `counter`.
"""

PROCESS = """
format_version: 1
process: skilled
initial: count
context:
  schema: {type: object, properties: {n: {type: integer}}}
nodes:
  count:
    type: agent
    environment: fake
    prompt: "Count from 41."
    tools: [think, learn_counter]
    writes: [n]
    transitions: [{to: done}]
  done: {type: final}
"""

@pytest.mark.prefect
def test_a_process_agent_learns_a_folder_skill_and_uses_its_tool(run_def, definitions, fake):
    from flows.store import visits as visit_store

    (definitions / "skills").mkdir()
    (definitions / "skills" / "counter.md").write_text(SKILL_FILE)
    fake.script("skilled", {"tool_calls": [{"name": "learn_counter", "arguments": {}}]},
                {"tool_calls": [{"name": "increment", "arguments": {"value": 41}}]},
                {"json": {"n": 42}})
    result = run_def({"env.yaml": ENV.format(model="skilled", url=fake.url), "p.yaml": PROCESS}, "skilled")
    assert result["status"] == "completed", result
    assert result["context"]["n"] == 42
    first, second, _ = fake.for_model("skilled")
    assert "increment" not in offered(first) and "learn_counter" in offered(first)
    assert "increment" in offered(second)
    calls = visit_store.tool_calls_for_run(result["run_id"])
    assert [(c.tool, c.status) for c in calls] == [("learn_counter", "ok"), ("increment", "ok")]
    assert calls[1].result == {"counter": 42}


DELEGATING = """
format_version: 1
process: delegating
initial: lead
context:
  schema: {type: object, properties: {n: {type: integer}}}
nodes:
  lead:
    type: agent
    environment: fake
    prompt: "Plan the work."
    tools: [think, learn_workstreams]
    writes: [n]
    transitions: [{to: done}]
  done: {type: final}
"""


@pytest.mark.prefect
def test_an_agent_that_may_learn_the_workstreams_skill_can_delegate_once_it_learned_it(run_def, fake):
    fake.script("delegating", {"tool_calls": [{"name": "learn_workstreams", "arguments": {}}]},
                {"tool_calls": [{"name": "list_workstreams", "arguments": {}}]},
                {"json": {"n": 0}})
    result = run_def({"env.yaml": ENV.format(model="delegating", url=fake.url), "p.yaml": DELEGATING}, "delegating")
    assert result["status"] == "completed", result
    first, second, third = fake.for_model("delegating")
    assert "launch_workstream" not in offered(first)
    assert {"launch_workstream", "list_workstreams", "terminate_workstream"} <= set(offered(second))
    # the visit's workstream hub was there for the unlocked tools (no "works only in an agent that delegates")
    assert tool_replies(third)["list_workstreams"] == []
    assert "# Workstreams" in tool_replies(second)["learn_workstreams"]["instructions"]
