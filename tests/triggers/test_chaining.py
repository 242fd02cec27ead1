"""On-complete chaining without `serve`: the finishing run's process starts what waits for it."""

from __future__ import annotations

import pytest

from trigger_helpers import wait_for

pytestmark = pytest.mark.prefect

SOURCE = """
format_version: 1
process: source
initial: decide
context:
  schema:
    type: object
    properties: {route: {type: string}, last: {type: string}, amount: {type: integer}}
    required: [route]
  initial: {amount: 42}
nodes:
  decide:
    type: tool
    tool: mark
    input: {name: source}
    writes: [last]
    transitions:
      - {to: ok, guard: {"==": [{var: route}, ok]}}
      - {to: alt}
  ok: {type: final}
  alt: {type: final}
"""

FOLLOWER = """
kind: pipeline
name: follower
context:
  schema:
    type: object
    properties: {who: {type: string}, total: {type: integer}, tag: {type: string}, last: {type: string}}
    required: [who]
triggers:
  - type: on_complete
    definition: source
    outcomes: [ok]
    as_user: chain-bot
    input: {tag: chained}
    map: {who: "from {{ last }}", total: "{{ amount }}"}
nodes:
  note: {type: tool, tool: mark, input: {name: "{{who}}"}, writes: [last]}
"""

ON_ALT = """
kind: pipeline
name: on_alt
context:
  schema: {type: object, properties: {last: {type: string}}}
triggers:
  - {type: on_complete, definition: source, outcomes: [alt]}
nodes:
  note: {type: tool, tool: mark, input: {name: on-alt}, writes: [last]}
"""


def runs_of(name: str):
    from flows.store import runs as run_store

    return sorted(run_store.list_runs(definition=name, limit=500)[0], key=lambda r: r.created_at)


def test_on_complete_starts_the_waiting_definition_with_mapped_inputs(run_def, definitions):
    (definitions / "follower.yaml").write_text(FOLLOWER)
    (definitions / "on_alt.yaml").write_text(ON_ALT)
    result = run_def({"source.yaml": SOURCE}, "source", {"route": "ok"})
    assert (result["status"], result["outcome"]) == ("completed", "ok")
    run = wait_for(lambda: (rs := runs_of("follower")) and rs[0].status == "completed" and rs[0], 120, "the chained run")
    assert (run.trigger, run.started_by) == ("on_complete", "chain-bot")
    assert run.inputs == {"tag": "chained", "who": "from source", "total": 42}  # input + map, 42 kept its type
    assert run.context["last"] == "from source"
    assert runs_of("on_alt") == []  # its outcome filter did not match


def test_outcome_filter_and_failed_runs(run_def, definitions):
    (definitions / "follower.yaml").write_text(FOLLOWER)
    (definitions / "on_alt.yaml").write_text(ON_ALT)
    run_def({"source.yaml": SOURCE}, "source", {"route": "other"})
    wait_for(lambda: (rs := runs_of("on_alt")) and rs[0].status == "completed", 120, "the on_alt run")
    assert runs_of("follower") == []


PING = """
kind: pipeline
name: {name}
context:
  schema: {{type: object, properties: {{last: {{type: string}}}}}}
triggers:
  - {{type: on_complete, definition: {other}}}
nodes:
  note: {{type: tool, tool: mark, input: {{name: {name}}}, writes: [last]}}
"""


def test_a_cycle_stops_at_the_chain_depth_limit(run_def, definitions, monkeypatch):
    import time

    monkeypatch.setenv("ERGON_CHAIN_MAX_DEPTH", "3")
    (definitions / "pong.yaml").write_text(PING.format(name="pong", other="ping"))
    run_def({"ping.yaml": PING.format(name="ping", other="pong")}, "ping")
    # ping (depth 0) → pong (1) → ping (2) → pong (3), which starts nothing
    wait_for(lambda: len(runs_of("ping")) + len(runs_of("pong")) == 4
             and all(r.status == "completed" for r in runs_of("ping") + runs_of("pong")), 180, "the chain to end")
    time.sleep(3)  # nothing more comes
    assert (len(runs_of("ping")), len(runs_of("pong"))) == (2, 2)
    assert all(r.trigger == "on_complete" for r in runs_of("pong"))
