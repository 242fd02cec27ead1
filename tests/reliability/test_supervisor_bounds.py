"""A model cannot keep a run going for ever: real ``ergon run`` processes whose model — a
supervisor, or an interaction whose answer a guard routes on — is a scripted model on the local
OpenAI-compatible test server that never lets the run end.

* a supervisor sending the run back into the same node fails it at
  ``metadata.supervisor.max_node_retries`` (default 3), its transitions at ``max_transitions``
  and its commands at ``max_commands``, with error kind ``model``, and the context of the last
  completed node (nothing of the answer that went past the bound is applied);
* a loop whose exit a model's answer decides fails at ``metadata.max_visits`` (kind ``world``,
  like a budget); the default is generous enough for a reviewer who sends work back many times.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "llm"))

from fake_openai import FakeOpenAI  # noqa: E402

pytestmark = pytest.mark.prefect

ERGON = [sys.executable, "-m", "flows.cli"]
#: a run that does not end within this long is taken to loop for ever
TIMEOUT = 150

ENV = """
kind: environment
name: sup
retries: 0
models:
  - {{model: openai/{model}, api_base: "{url}", api_key: "env:FAKE_OPENAI_KEY"}}
"""

LOOP = """
format_version: 1
process: sup_loop
initial: step1
metadata:
  supervisor: {{model: sup{policy}}}
context:
  schema:
    type: object
    properties:
      count: {{type: integer}}
      last: {{type: string}}
      note: {{type: string}}
  initial: {{count: 0}}
nodes:
  step1:
    type: tool
    config: {{context_update: {{last: step1}}}}
    writes: [last]
    transitions: [{{to: step2}}]
  step2:
    type: tool
    config: {{context_update: {{last: step2, count: "{{{{ count + 1 }}}}"}}}}
    writes: [last, count]
    transitions: [{{to: done}}]
  done: {{type: final}}
"""


@pytest.fixture(scope="module")
def server():
    fake = FakeOpenAI().start()
    yield fake
    fake.stop()


@pytest.fixture
def fake(server):
    server.reset()
    yield server
    server.reset()


@pytest.fixture
def cli_env(prefect_api, store, definitions):
    return {**os.environ, "ERGON_DATABASE_URL": store, "ERGON_DEFINITIONS": str(definitions), "COLUMNS": "200",
            "FAKE_OPENAI_KEY": "sk-fake-test-key"}


def ergon_run(name: str, env: dict, *args: str) -> tuple[dict, subprocess.CompletedProcess]:
    """``ergon run NAME --json``: its result line and the process (fails the test when it never ends)."""
    try:
        done = subprocess.run(ERGON + ["run", name, "--json", *args], env=env, capture_output=True, text=True,
                              timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"`ergon run {name}` was still running after {TIMEOUT} s: nothing bounded the loop")
    lines = done.stdout.strip().splitlines()
    assert lines, f"no result line (exit {done.returncode}):\n{done.stderr[-3000:]}"
    return json.loads(lines[-1]), done


def event_of(body: dict) -> str:
    """The event line of a supervisor request."""
    return [m for m in body["messages"] if m["role"] == "user"][-1]["content"].splitlines()[0]


def tool_calls(*pairs: tuple[str, dict]) -> dict:
    return {"tool_calls": [{"name": n, "arguments": a} for n, a in pairs]}


def visits(run_id: str) -> list[tuple[str, str]]:
    from flows.store import visits as visit_store

    return [(v.node_id, v.status) for v in visit_store.visits_for_run(run_id) if v.parent_visit_id is None]


def test_a_supervisor_retrying_a_node_for_ever_fails_the_run_at_max_node_retries(fake, cli_env, definitions):
    from flows.store import run_events

    answers = []

    def supervisor(body: dict) -> dict:
        if event_of(body) == "EVENT node_completed at node `step2`":
            answers.append(body)
            # a context repair and a retry in one answer: past the bound, neither is applied
            return tool_calls(("set_context", {"updates": {"note": f"answer {len(answers)}"}}),
                              ("retry_node", {"node": "step1"}))
        return {"content": "Looks fine."}

    fake.respond("sup", supervisor)
    (definitions / "sup.yaml").write_text(ENV.format(model="sup", url=fake.url))
    (definitions / "sup_loop.yaml").write_text(LOOP.format(policy=""))
    result, done = ergon_run("sup_loop", cli_env, "--supervised")

    assert result["status"] == "failed" and result["error_kind"] == "model", result
    assert ("the supervisor asked to retry node `step1` a 4th time; metadata.supervisor.max_node_retries is 3"
            in result["error"]), result["error"]
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr[-3000:]
    # step2 completed four times (the first run and three retries); the fourth answer's repair was
    # taken back: the context is the one its last completed visit left
    assert result["context"] == {"count": 4, "last": "step2", "note": "answer 3"}
    assert [v for v in visits(result["run_id"]) if v[0] == "step2"] == [("step2", "completed")] * 4
    assert len(answers) == 4
    from flows.store import runs as run_store

    stored = run_store.get_run(result["run_id"])
    assert stored.status == "failed" and stored.error_kind == "model" and stored.context == result["context"]
    retries = [(c.outcome, c.reason) for c in run_events.events_for_run(result["run_id"], kind="command")
               if c.name == "retry_node"]
    assert retries[:3] == [("accepted", None)] * 3
    assert retries[3][0] == "refused" and "max_node_retries is 3" in retries[3][1]


def test_transition_overrides_are_bounded_by_the_policy(fake, cli_env, definitions):
    def supervisor(body: dict) -> dict:
        if event_of(body) == "EVENT node_completed at node `step2`":
            return tool_calls(("transition_to", {"node": "step1"}))
        return {"content": "Looks fine."}

    fake.respond("sup", supervisor)
    (definitions / "sup.yaml").write_text(ENV.format(model="sup", url=fake.url))
    (definitions / "sup_loop.yaml").write_text(
        LOOP.format(policy=", allow_transition_override: true, max_transitions: 2"))
    result, done = ergon_run("sup_loop", cli_env, "--supervised")

    assert result["status"] == "failed" and result["error_kind"] == "model", result
    assert ("a 3rd transition (to `step1`) in this run; metadata.supervisor.max_transitions is 2"
            in result["error"]), result["error"]
    assert result["context"] == {"count": 3, "last": "step2"}
    assert "Traceback" not in done.stderr


def test_the_commands_of_a_supervisor_are_bounded_in_all(fake, cli_env, definitions):
    # a supervisor that repairs the context at every step, harmless one by one
    def supervisor(body: dict) -> dict:
        if event_of(body).startswith("EVENT node_entered"):
            return tool_calls(("set_context", {"updates": {"note": "checked"}}))
        return {"content": "Looks fine."}

    fake.respond("sup", supervisor)
    (definitions / "sup.yaml").write_text(ENV.format(model="sup", url=fake.url))
    (definitions / "sup_loop.yaml").write_text(LOOP.format(policy=", max_commands: 1"))
    result, _ = ergon_run("sup_loop", cli_env, "--supervised")

    assert result["status"] == "failed" and result["error_kind"] == "model", result
    assert "a 2nd command (`set_context`) in this run; metadata.supervisor.max_commands is 1" in result["error"]
    assert result["context"] == {"count": 0, "last": "step1", "note": "checked"}


MODEL_LOOP = """
format_version: 1
process: model_loop
initial: ask
{metadata}
context:
  schema:
    type: object
    properties:
      again: {{type: boolean}}
  initial: {{}}
nodes:
  ask:
    type: interaction
    interaction: Again
    writes: [again]
    transitions:
      - {{to: ask, guard: {{"==": [{{var: again}}, true]}}}}
      - {{to: done}}
  done: {{type: final}}
"""

AGAIN = """
kind: interaction
name: Again
environment: sup
prompts:
  - {role: user, template: "Is there more to do?"}
result_schema: {type: object, properties: {again: {type: boolean}}, required: [again]}
"""


def test_a_loop_a_model_keeps_going_ends_at_max_visits(fake, cli_env, definitions):
    fake.respond("loopy", lambda body: {"json": {"again": True}})
    (definitions / "sup.yaml").write_text(ENV.format(model="loopy", url=fake.url))
    (definitions / "again.yaml").write_text(AGAIN)
    (definitions / "model_loop.yaml").write_text(MODEL_LOOP.format(metadata="metadata: {max_visits: 6}"))
    result, done = ergon_run("model_loop", cli_env)

    assert result["status"] == "failed" and result["error_kind"] == "world", result
    assert ("the run would make a 7th node visit (node `ask`); metadata.max_visits is 6: raise it if the process "
            "is meant to loop that long") in result["error"]
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr[-3000:]
    assert visits(result["run_id"]) == [("ask", "completed")] * 6
    assert len(fake.for_model("loopy")) == 6, "no model call after the bound"
    assert result["context"] == {"again": True}
