"""A resumed run does not call the model again for an answer it already got — end to end: a real
`ergon run` process killed while its agent is in a tool call, then `ergon runs resume`."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.prefect

ERGON = [sys.executable, "-m", "flows.cli"]

FILES = {
    "env.yaml": """
kind: environment
name: fake
models:
  - {{model: openai/resume-agent, api_base: "{url}", api_key: "env:FAKE_OPENAI_KEY"}}
""",
    "slow_agent.yaml": """
format_version: 1
process: slow_agent
initial: work
context:
  schema: {type: object, properties: {last: {type: string}}}
nodes:
  work:
    type: agent
    environment: fake
    prompt: "Mark the ledger, then answer."
    tools: [mark]
    writes: [last]
    transitions: [{to: done}]
  done: {type: final}
""",
}


def test_resume_reuses_the_model_answer_of_the_killed_visit(prefect_api, store, definitions, fake):
    from flows.store import runs as run_store
    from flows.store import visits as visit_store

    for name, text in FILES.items():
        (definitions / name).write_text(text.format(url=fake.url) if name == "env.yaml" else text)
    # Three answers queued, two expected: the tool call (before the kill), then the final answer
    # (after the resume). A resume that asked again would get the final answer for its first call.
    fake.script("resume-agent",
                {"tool_calls": [{"name": "mark", "arguments": {"name": "slow", "seconds": 8}}]},
                {"json": {"last": "done"}},
                {"json": {"last": "asked a third time"}})
    env = {**os.environ, "ERGON_DATABASE_URL": store, "ERGON_DEFINITIONS": str(definitions)}
    proc = subprocess.Popen(ERGON + ["run", "slow_agent", "--json"], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        run_id = None
        while time.monotonic() < deadline and run_id is None:
            rows, _ = run_store.list_runs(definition="slow_agent")
            if rows and visit_store.llm_calls_for_run(rows[0].id):
                run_id = rows[0].id
            time.sleep(0.2)
        assert run_id, "the agent's first model call was not recorded"
        time.sleep(1.0)  # into the 8 s tool call
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert len(fake.for_model("resume-agent")) == 1

    res = subprocess.run(ERGON + ["runs", "resume", run_id, "--json"], env=env, capture_output=True, text=True,
                         timeout=240)
    assert res.returncode == 0, res.stderr
    result = json.loads(res.stdout.strip().splitlines()[-1])
    assert result["status"] == "completed" and result["context"]["last"] == "done", result
    assert len(fake.for_model("resume-agent")) == 2, "the first answer was asked for again"
    calls = visit_store.llm_calls_for_run(run_id)
    reused = [c for c in calls if (c.response or {}).get("reused_from")]
    assert len(reused) == 1 and reused[0].cost_usd == 0
