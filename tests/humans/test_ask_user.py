"""An agent asks a person through the `ask_user` tool: the run pauses on a task with a free-text
`answer` field, a member of the node's `ask_user` group answers, and the answer comes back to the
agent as the tool result."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from test_pause_resume import ERGON, cli, finish, wait_for_task

sys.path.insert(0, str(Path(__file__).parents[1] / "llm"))

from fake_openai import FakeOpenAI  # noqa: E402

pytestmark = pytest.mark.prefect

PROCESS = """
format_version: 1
process: asking
initial: plan_trip
context:
  schema:
    type: object
    properties:
      region: {{type: string}}
nodes:
  plan_trip:
    type: agent
    environment: fake
    prompt: Pick the region for the offsite; ask the organisers.
    tools: [ask_user]
    ask_user: group:organisers
    writes: [region]
    transitions: [{{to: done, trigger: agent}}]
  done: {{type: final}}
"""

ENV = """
kind: environment
name: fake
models:
  - {{model: openai/asker, api_base: "{url}", api_key: "env:FAKE_OPENAI_KEY"}}
"""


def _run_with_organisers(name: str, store: str, definitions: Path, tokens) -> tuple[dict, subprocess.Popen]:
    """`ergon run NAME --json` started by `starter`, with olga of the organisers able to answer."""
    env = {**os.environ, "ERGON_DATABASE_URL": store, "ERGON_DEFINITIONS": str(definitions),
           "FAKE_OPENAI_KEY": "sk-test", "ERGON_TOKEN": tokens["starter"]}
    assert cli(["users", "add", "olga", "--group", "organisers", "--token", tokens.admin], env).returncode == 0
    proc = subprocess.Popen(ERGON + ["run", name, "--json"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    return env, proc


def test_ask_user_pauses_and_returns_the_answer_to_the_agent(prefect_api, store, definitions, tokens):
    server = FakeOpenAI().start()
    try:
        (definitions / "asking.yaml").write_text(PROCESS.format())
        (definitions / "env.yaml").write_text(ENV.format(url=server.url))
        server.script("asker", {"tool_calls": [{"name": "ask_user", "arguments": {"question": "Which region?"}}]},
                      {"json": {"region": "EU"}})
        env, proc = _run_with_organisers("asking", store, definitions, tokens)
        try:
            task = wait_for_task("asking")
            assert task.title == "Which region?" and task.assignee == "group:organisers"
            outsider = cli(["tasks", "answer", task.id, "--set", "answer=US", "--token", tokens["starter"]], env)
            assert outsider.returncode == 1
            ok = cli(["tasks", "answer", task.id, "--set", "answer=Europe, please", "--token", tokens["olga"]], env)
            assert ok.returncode == 0, ok.stdout + ok.stderr
            result = finish(proc)
        finally:
            if proc.poll() is None:
                proc.kill()
        assert result["status"] == "completed" and result["context"]["region"] == "EU"
        second = server.for_model("asker")[1].body["messages"]
        tool_message = next(m for m in second if m["role"] == "tool")
        assert json.loads(tool_message["content"]) == {"answered_by": "olga", "answer": "Europe, please"}
    finally:
        server.stop()


#: a foreach whose items run inside the node's one task run (``task_runs: node``), each an agent
#: that asks the organisers: two tasks open at once, answered in either order
EACH_ASKS = """
format_version: 1
process: asking_each
initial: each
context:
  schema:
    type: object
    properties:
      teams: {{type: array, items: {{type: string}}}}
      region: {{type: string}}
      regions: {{type: array}}
  initial: {{teams: [north, south]}}
nodes:
  each:
    type: foreach
    foreach: teams
    as: team
    item_id: "{{{{ team }}}}"
    max_concurrency: 2
    task_runs: node
    node:
      type: agent
      environment: fake
      prompt: "Pick the region for team {{{{ team }}}}; ask the organisers."
      tools: [ask_user]
      ask_user: group:organisers
      writes: [region]
    collect: regions
    writes: [regions]
    transitions: [{{to: done}}]
  done: {{type: final}}
"""


def test_agents_of_one_task_run_each_ask_a_person(prefect_api, store, definitions, tokens):
    from test_parallel_tasks import wait_for_open_tasks

    from flows.store import visits as visit_store

    server = FakeOpenAI().start()
    try:
        (definitions / "asking_each.yaml").write_text(EACH_ASKS.format())
        (definitions / "env.yaml").write_text(ENV.format(url=server.url))
        # both items ask first (the window holds both), then each gets its answer
        server.script("asker", *({"tool_calls": [{"name": "ask_user", "arguments": {"question": "Which region?"}}]},) * 2,
                      {"json": {"region": "EU"}}, {"json": {"region": "US"}})
        env, proc = _run_with_organisers("asking_each", store, definitions, tokens)
        try:
            first, second = wait_for_open_tasks(2)
            assert first.prefect_flow_run_id != second.prefect_flow_run_id, "each question waits in its own subflow"
            for task, said in ((second, "Americas"), (first, "Europe")):
                ok = cli(["tasks", "answer", task.id, "--set", f"answer={said}", "--token", tokens["olga"]], env)
                assert ok.returncode == 0, ok.stdout + ok.stderr
            result = finish(proc)
        finally:
            if proc.poll() is None:
                proc.kill()
        assert result["status"] == "completed", result
        assert sorted(r["region"] for r in result["context"]["regions"]) == ["EU", "US"]
        items = {v.item_key: v.status for v in visit_store.visits_for_run(result["run_id"]) if v.parent_visit_id}
        assert items == {"north": "completed", "south": "completed"}
        answers = sorted(json.loads(m["content"])["answer"] for call in server.for_model("asker")
                         for m in call.body["messages"] if m["role"] == "tool")
        assert answers == ["Americas", "Europe"], "each agent got its own person's answer"
    finally:
        server.stop()
