"""Supervised runs end to end: real Prefect runs whose supervisor is a scripted model on the local
OpenAI-compatible test server (or the offline model), and the command rules on their own."""

from __future__ import annotations

import json

import pytest

ENV = """
kind: environment
name: sup
retries: 0
models:
  - {{model: openai/sup, api_base: "{url}", api_key: "env:FAKE_OPENAI_KEY"}}
"""
PROCESS = """
format_version: 1
process: watched
initial: intake
metadata:
  supervisor: {{model: {model}}}
context:
  schema:
    type: object
    properties:
      amount: {{type: integer}}
      divisor: {{type: integer}}
      share: {{type: integer}}
      tier: {{type: string, enum: [low, high]}}
      _internal: {{type: string}}
  initial: {{amount: 5, divisor: 0}}
nodes:
  intake:
    type: tool
    config: {{context_update: {{share: "{{{{ 100 // divisor }}}}"}}}}
    writes: [share]
    transitions:
      - {{to: small, guard: {{"<": [{{var: amount}}, 10]}}}}
      - {{to: big, guard: {{">": [{{var: amount}}, 100]}}}}
  small:
    type: tool
    skippable: true
    config: {{context_update: {{tier: low}}}}
    writes: [tier]
    transitions: [{{to: done}}]
  big:
    type: tool
    config: {{context_update: {{tier: high}}}}
    writes: [tier]
    transitions: [{{to: done}}]
  done: {{type: final}}
"""


def tool_call(name: str, **args) -> dict:
    return {"tool_calls": [{"name": name, "arguments": args}]}


def calls(*pairs: tuple[str, dict]) -> dict:
    return {"tool_calls": [{"name": n, "arguments": a} for n, a in pairs]}


SAY_CONTINUE = {"content": "Looks fine."}


@pytest.fixture
def supervised(run_def, fake):
    """supervised(inputs, model="sup") → (result dict, the run's command rows)."""
    from flows.store import run_events

    def run(inputs: dict | None = None, *, model: str = "sup", **kw) -> tuple[dict, list]:
        files = {"watched.yaml": PROCESS.format(model=model), "sup.yaml": ENV.format(url=fake.url)}
        result = run_def(files, "watched", inputs or {}, supervised=True, **kw)
        return result, run_events.events_for_run(result["run_id"], kind="command")

    return run


pytestmark = pytest.mark.prefect


def _events_sent(fake) -> list[str]:
    """The event line of every request the supervisor made."""
    out = []
    for r in fake.for_model("sup"):
        last_user = [m for m in r.body["messages"] if m["role"] == "user"][-1]["content"]
        out.append(last_user.splitlines()[0])
    return out


def test_a_failed_node_is_repaired_and_retried_and_an_unroutable_one_sent_through_a_declared_exit(supervised, fake):
    # divisor 0 fails `intake`; the supervisor repairs the context and retries it; then amount 50
    # matches no transition: a made-up target is refused, a declared exit taken
    fake.script("sup", SAY_CONTINUE, SAY_CONTINUE,
                calls(("set_context", {"updates": {"divisor": 4}}), ("retry_node", {})),
                SAY_CONTINUE,
                tool_call("transition_to", node="nowhere"),
                tool_call("transition_to", node="big"))
    result, commands = supervised({"amount": 50})
    assert result["status"] == "completed", (result["error"], _events_sent(fake))
    from flows.store import visits as visit_store

    errors = [v.error for v in visit_store.visits_for_run(result["run_id"]) if v.error]
    assert result["context"].get("share") == 25 and result["context"]["tier"] == "high", errors
    assert _events_sent(fake)[:6] == ["EVENT run_started", "EVENT node_entered at node `intake`",
                                      "EVENT node_failed at node `intake`", "EVENT node_entered at node `intake`",
                                      "EVENT no_transition at node `intake`", "EVENT no_transition at node `intake`"]
    rows = [(c.name, c.outcome, c.args["event"]) for c in commands]
    assert rows == [("set_context", "accepted", "node_failed"), ("retry_node", "accepted", "node_failed"),
                    ("transition_to", "refused", "no_transition"), ("transition_to", "accepted", "no_transition")]
    assert "no node 'nowhere'" in commands[2].reason
    # the refusal was answered to the supervisor as the tool call's result before it was asked again
    sixth = fake.for_model("sup")[5].body["messages"]
    refusal = [m for m in sixth if m["role"] == "tool"][-1]
    assert json.loads(refusal["content"])["accepted"] is False
    # the re-routed visit is checkpointed towards `big` (a resume continues there)
    from flows.store import visits as visit_store

    intake = [v for v in visit_store.visits_for_run(result["run_id"]) if v.node_id == "intake" and v.status == "completed"]
    assert [v.next_node for v in intake] == ["big"]


def test_refused_commands_leave_the_run_as_a_programmatic_run_would(supervised, fake):
    fake.script("sup", SAY_CONTINUE,
                # intake entered: a write of an internal field and one outside the schema are refused
                calls(("set_context", {"updates": {"_internal": "x"}}), ("set_context", {"updates": {"tier": "mid"}})),
                SAY_CONTINUE)
    result, commands = supervised({"amount": 5, "divisor": 5})
    assert result["status"] == "completed" and result["context"]["tier"] == "low"
    assert "_internal" not in result["context"]
    reasons = [(c.outcome, c.reason) for c in commands]
    assert reasons[0][0] == "refused" and "internal fields cannot be written: _internal" in reasons[0][1]
    assert reasons[1][0] == "refused" and "violates context.schema" in reasons[1][1]


def test_skip_is_taken_only_where_the_node_is_skippable(supervised, fake):
    fake.script("sup", SAY_CONTINUE,
                tool_call("skip_node", reason="not needed"),  # intake: not skippable → refused
                SAY_CONTINUE,  # asked again: goes on
                SAY_CONTINUE,  # intake completed
                tool_call("skip_node", reason="tier known"))  # small: skippable
    result, commands = supervised({"amount": 5, "divisor": 5})
    assert result["status"] == "completed"
    assert "tier" not in result["context"]  # `small` never ran
    assert [(c.name, c.node_id, c.outcome) for c in commands] == [
        ("skip_node", "intake", "refused"), ("skip_node", "small", "accepted")]
    assert "`intake` is not skippable" in commands[0].reason
    from flows.store import visits as visit_store

    small = [v for v in visit_store.visits_for_run(result["run_id"]) if v.node_id == "small"]
    assert [(v.status, v.next_node) for v in small] == [("skipped", "done")]


def test_fail_process_fails_the_run_with_the_supervisors_reason(supervised, fake):
    fake.script("sup", tool_call("fail_process", reason="the amount looks forged"))
    result, commands = supervised({"amount": 5, "divisor": 5})
    assert result["status"] == "failed"
    assert "failed by the supervisor: the amount looks forged" in result["error"]
    assert [(c.name, c.outcome) for c in commands] == [("fail_process", "accepted")]


def test_the_start_message_reaches_the_supervisor_once(supervised, fake):
    result, _ = supervised({"amount": 5, "divisor": 5}, message="prioritise speed over thoroughness")
    assert result["status"] == "completed"
    bodies = [json.dumps(r.body["messages"][-1]) for r in fake.for_model("sup")]
    assert "prioritise speed" in bodies[0] and not any("prioritise speed" in b for b in bodies[1:])


def test_the_offline_supervisor_lets_the_run_go_on(supervised, fake):
    from flows.store import visits as visit_store

    result, commands = supervised({"amount": 5, "divisor": 5}, model="ergon/offline")
    assert result["status"] == "completed" and result["outcome"] == "done" and commands == []
    assert fake.for_model("sup") == []
    supervisor_calls = [c for c in visit_store.llm_calls_for_run(result["run_id"]) if c.visit_id is None]
    assert len(supervisor_calls) == 5  # run started, intake entered/completed, small entered/completed


WAITING = """
format_version: 1
process: watched_task
initial: ask
metadata:
  supervisor: {model: sup}
context:
  schema:
    type: object
    properties:
      decision: {type: string}
nodes:
  ask:
    type: human_task
    task:
      title: Decide
      fields: [{name: decision, type: text, required: true}]
    timeout: 2
    on_timeout: expired
    writes: [decision]
    transitions: [{to: done}]
  done: {type: final}
  expired: {type: final}
"""


def test_the_supervisor_hears_a_waiting_task_and_cannot_override_the_person(run_def, fake):
    from flows.store import run_events

    fake.script("sup", SAY_CONTINUE, SAY_CONTINUE, tool_call("set_context", updates={"decision": "approved"}))
    result = run_def({"watched_task.yaml": WAITING, "sup.yaml": ENV.format(url=fake.url)}, "watched_task",
                     supervised=True)
    assert result["status"] == "completed" and result["outcome"] == "expired"
    assert "decision" not in result["context"]
    assert "EVENT human_task_waiting at node `ask`" in _events_sent(fake)
    [command] = run_events.events_for_run(result["run_id"], kind="command")
    assert command.outcome == "refused" and "a person is being asked" in command.reason


def test_only_processes_run_supervised_and_only_supervised_runs_take_messages(store, definitions, fake):
    from flows import runs
    from flows.catalog import Catalog
    from flows.runs.supervision import MessageRefused, post_message

    (definitions / "flat.yaml").write_text(
        "kind: pipeline\nname: flat\ncontext: {schema: {type: object, properties: {n: {type: integer}}}}\n"
        "nodes:\n  one: {type: tool, config: {context_update: {n: 1}}, writes: [n]}\n")
    (definitions / "watched.yaml").write_text(PROCESS.format(model="sup"))
    catalog = Catalog.load()
    with pytest.raises(runs.StartRefused, match="only processes run supervised"):
        runs.create(catalog.compile("flat"), {}, catalog=catalog, supervised=True)
    with pytest.raises(runs.StartRefused, match="start the run supervised"):
        runs.create(catalog.compile("watched"), {}, catalog=catalog, message="hello")
    plain = runs.create(catalog.compile("watched"), {}, catalog=catalog)
    with pytest.raises(MessageRefused, match="not supervised"):
        post_message(plain, "hello", actor="lea")
    watched = runs.create(catalog.compile("watched"), {}, catalog=catalog, supervised=True)
    with pytest.raises(MessageRefused, match="empty"):
        post_message(watched, "   ", actor="lea")
    post_message(watched, "go slow", actor="lea")
    from flows.store import run_events

    assert [(m.actor, m.args["text"]) for m in run_events.take_messages(watched.id)] == [("lea", "go slow")]
    assert run_events.take_messages(watched.id) == []  # delivered once


def test_runs_message_posts_to_a_supervised_run_and_refuses_others(store, definitions, tokens):
    import os
    import subprocess
    import sys

    from flows import runs
    from flows.catalog import Catalog
    from flows.store import run_events

    (definitions / "watched.yaml").write_text(PROCESS.format(model="sup"))
    catalog = Catalog.load()
    watched = runs.create(catalog.compile("watched"), {}, catalog=catalog, supervised=True)
    plain = runs.create(catalog.compile("watched"), {}, catalog=catalog)
    env = {**os.environ, "ERGON_TOKEN": tokens["lea"]}

    def message(run_id: str, text: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "flows.cli", "runs", "message", run_id, text], env=env,
                              capture_output=True, text=True, timeout=120)

    posted = message(watched.id, "check the totals twice")
    assert posted.returncode == 0 and "message posted" in posted.stdout, posted.stderr
    refused = message(plain.id, "hello")
    assert refused.returncode == 1 and "is not supervised" in refused.stderr and "Traceback" not in refused.stderr
    assert [(m.actor, m.args["text"]) for m in run_events.events_for_run(watched.id, kind="message")] == [
        ("lea", "check the totals twice")]
    assert run_events.events_for_run(plain.id) == []


def test_a_resumed_supervised_run_tells_a_fresh_conversation_what_ran_before(supervised, fake):
    from flows import people, runs
    from flows.runs import controls

    result, commands = supervised({"amount": 5})  # divisor 0: intake fails; the supervisor lets it
    assert result["status"] == "failed" and commands == []
    people.add_user("ops", admin=True)
    controls.set_context(result["run_id"], {"divisor": 5}, actor="ops", why="repair")
    fake.reset()
    resumed = runs.resume(result["run_id"])
    assert resumed.status == "completed" and resumed.context["share"] == 20
    first = fake.for_model("sup")[0].body["messages"]
    assert [m["role"] for m in first] == ["system", "user"], "a fresh conversation"
    assert first[1]["content"].startswith("EVENT run_started at node `intake`")
    assert '"resumed": true' in first[1]["content"] and '"status": "failed"' in first[1]["content"]
