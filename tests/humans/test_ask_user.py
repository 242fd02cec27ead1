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


def test_ask_user_pauses_and_returns_the_answer_to_the_agent(prefect_api, store, definitions, tokens):
    server = FakeOpenAI().start()
    try:
        (definitions / "asking.yaml").write_text(PROCESS.format())
        (definitions / "env.yaml").write_text(ENV.format(url=server.url))
        server.script("asker", {"tool_calls": [{"name": "ask_user", "arguments": {"question": "Which region?"}}]},
                      {"json": {"region": "EU"}})
        env = {**os.environ, "ERGON_DATABASE_URL": store, "ERGON_DEFINITIONS": str(definitions),
               "FAKE_OPENAI_KEY": "sk-test", "ERGON_TOKEN": tokens["starter"]}
        assert cli(["users", "add", "olga", "--group", "organisers", "--token", tokens.admin], env).returncode == 0
        proc = subprocess.Popen(ERGON + ["run", "asking", "--json"], env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
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
