"""Process (state machine) runs on a real Prefect server with the real store."""

from __future__ import annotations

import pytest

from testing_tools import marks

pytestmark = pytest.mark.prefect

HEADER = """
format_version: 1
process: {name}
initial: {initial}
context:
  schema:
    type: object
    properties:
{props}
    required: [{required}]
  initial: {initial_ctx}
nodes:
"""


def process(name: str, props: dict[str, str], nodes: str, *, initial: str = "start", required: str = "",
            initial_ctx: str = "{}") -> str:
    lines = "\n".join(f"      {k}: {v}" for k, v in props.items())
    return HEADER.format(name=name, initial=initial, props=lines, required=required, initial_ctx=initial_ctx) + nodes


def visits(run_id: str):
    from flows.store import visits as visit_store

    return visit_store.visits_for_run(run_id)


def test_tool_chain_writes_context_and_records_diffs(run_def):
    text = process("chain", {"a": "{type: integer}", "b": "{type: string}"}, """
  start:
    type: tool
    config: {context_update: {a: 1}}
    writes: [a]
    transitions: [{to: second}]
  second:
    type: tool
    config: {context_update: {b: "a was {{ a }}"}}
    writes: [b]
    transitions: [{to: done}]
  done: {type: final}
""")
    result = run_def({"chain.yaml": text}, "chain")
    assert result["status"] == "completed", result
    assert result["outcome"] == "done"
    assert result["context"] == {"a": 1, "b": "a was 1"}
    vs = visits(result["run_id"])
    assert [v.node_id for v in vs] == ["start", "second", "done"]
    assert vs[0].context_diff == [{"op": "add", "path": "/a", "old": None, "new": 1}] or vs[0].context_diff[0]["new"] == 1
    assert vs[1].next_node == "done"
    assert all(v.status == "completed" for v in vs)


def test_an_internal_field_nothing_writes_is_no_run_input(run_def):
    # `_` fields are the engine's: a run input of that name made Prefect's parameter model refuse
    # the flow (pydantic allows no leading underscore), so the run crashed before its first node
    text = process("internal", {"a": "{type: integer}", "_seen": "{type: string}"}, """
  start:
    type: tool
    config: {context_update: {a: 1}}
    writes: [a]
    transitions: [{to: done}]
  done: {type: final}
""")
    result = run_def({"internal.yaml": text}, "internal")
    assert result["status"] == "completed", result
    assert result["context"] == {"a": 1}


def test_loop_records_one_visit_per_pass_and_guards_route(run_def):
    text = process("loop", {"counter": "{type: integer}"}, """
  start:
    type: tool
    tool: increment
    input: {value: "{{ counter }}"}
    writes: [counter]
    transitions:
      - {to: start, guard: {"<": [{var: counter}, 3]}}
      - {to: done}
  done: {type: final}
""", initial_ctx="{counter: 0}")
    result = run_def({"loop.yaml": text}, "loop")
    assert result["status"] == "completed", result
    assert result["context"]["counter"] == 3
    assert [v.node_id for v in visits(result["run_id"])] == ["start", "start", "start", "done"]


def test_no_transition_matched_fails_the_run_naming_node_and_guards(run_def):
    text = process("stuck", {"x": "{type: integer}"}, """
  start:
    type: tool
    config: {context_update: {x: 5}}
    writes: [x]
    transitions: [{to: done}]
  done: {type: final}
""")

    def guard_only(plan):  # `ergon check` refuses exits with no fallback (no-fallback): guard it after compiling
        edges = [e.model_copy(update={"guard": {">": [{"var": "x"}, 10]}}) if e.source == "start" else e
                 for e in plan.edges]
        return plan.model_copy(update={"edges": edges})

    result = run_def({"stuck.yaml": text}, "stuck", mutate=guard_only)
    assert result["status"] == "failed"
    assert "no transition matched after `start`" in result["error"]
    assert '"var":"x"' in result["error"] and "done" in result["error"]
    assert result["context"] == {}, "a node whose routing failed changes nothing"


def test_write_outside_scope_is_rejected_and_context_unchanged(run_def):
    text = process("scope", {"a": "{type: integer}", "secret": "{type: object}"}, """
  start:
    type: tool
    tool: increment
    input: {value: 1}
    output: secret
    writes: [secret]
    transitions: [{to: done}]
  done: {type: final}
""", initial_ctx="{a: 0}")

    def narrow(plan):  # the checker refuses undeclared writes, so narrow them after compiling
        node = plan.nodes["start"].model_copy(update={"writes": ["a"]})
        return plan.model_copy(update={"nodes": {**plan.nodes, "start": node}})

    result = run_def({"scope.yaml": text}, "scope", mutate=narrow)
    assert result["status"] == "failed"
    assert "outside its declared writes" in result["error"]
    assert result["context"] == {"a": 0}
    v = visits(result["run_id"])[0]
    assert v.status == "failed" and not v.context_diff


def test_write_violating_schema_is_rejected(run_def):
    text = process("typed", {"n": "{type: integer}"}, """
  start:
    type: tool
    config: {context_update: {n: "{{ 'not a number' }}"}}  # a template: only the run can see its value
    writes: [n]
    transitions: [{to: done}]
  done: {type: final}
""")
    result = run_def({"typed.yaml": text}, "typed")
    assert result["status"] == "failed"
    assert "violates context.schema" in result["error"]
    assert result["context"] == {}


def test_context_over_64kb_fails_the_node(run_def):
    text = process("big", {"blob": "{type: string}"}, """
  start:
    type: tool
    tool: blob
    input: {size: 70000}
    writes: [blob]
    transitions: [{to: done}]
  done: {type: final}
""")
    result = run_def({"big.yaml": text}, "big")
    assert result["status"] == "failed"
    assert "65536-byte cap" in result["error"]


def test_retries_show_three_attempts(run_def):
    text = process("retry", {"attempts": "{type: integer}"}, """
  start:
    type: tool
    tool: flaky
    input: {key: r1, failures: 2}
    writes: [attempts]
    retry: {retries: 2, delay_seconds: 0.05, backoff: 2}
    transitions: [{to: done}]
  done: {type: final}
""")
    result = run_def({"retry.yaml": text}, "retry")
    assert result["status"] == "completed", result
    assert result["context"]["attempts"] == 3
    starts = [v for v in visits(result["run_id"]) if v.node_id == "start"]
    assert [(v.attempt, v.status) for v in starts] == [(1, "failed"), (2, "failed"), (3, "completed")]
    assert "flaky failure 1 of 2" in starts[0].error


def test_retry_only_on_listed_error_kinds(run_def):
    text = process("retry_kind", {"attempts": "{type: integer}"}, """
  start:
    type: tool
    tool: flaky
    input: {key: r2, failures: 1}
    writes: [attempts]
    retry: {retries: 3, delay_seconds: 0.01, retry_on: [TimeoutError]}
    transitions: [{to: done}]
  done: {type: final}
""")
    result = run_def({"retry_kind.yaml": text}, "retry_kind")
    assert result["status"] == "failed", "a ConnectionError is not a listed kind: no retry"
    assert len([v for v in visits(result["run_id"]) if v.node_id == "start"]) == 1


FOREACH = """
  start:
    type: foreach
    foreach: numbers
    as: n
    item_id: "n{{{{ n }}}}"
    max_concurrency: 2
    failure_policy: {policy}
    node:
      type: tool
      tool: double_unless
      input: {{value: "{{{{ n }}}}", bad: 3}}
      writes: [doubled]
    collect: {{into: results, include: [status, item_id, output, error]}}
    writes: [results]
    transitions: [{{to: done}}]
  done: {{type: final}}
"""


def test_foreach_collect_errors_keeps_survivors(run_def):
    text = process("fe_collect", {"numbers": "{type: array}", "results": "{type: array}"},
                   FOREACH.format(policy="collect_errors"), required="numbers")
    result = run_def({"fe.yaml": text}, "fe_collect", {"numbers": [1, 2, 3, 4]})
    assert result["status"] == "completed", result
    res = result["context"]["results"]
    assert [r["status"] for r in res] == ["completed", "completed", "failed", "completed"]
    assert [r["item_id"] for r in res] == ["n1", "n2", "n3", "n4"]
    assert res[0]["output"] == {"doubled": 2}
    assert "item 3 is bad" in res[2]["error"]
    items = [v for v in visits(result["run_id"]) if v.parent_visit_id]
    assert sorted(v.item_key for v in items) == ["n1", "n2", "n3", "n4"]


def test_foreach_fail_fast_fails_the_node(run_def):
    text = process("fe_fast", {"numbers": "{type: array}", "results": "{type: array}"},
                   FOREACH.format(policy="fail_fast"), required="numbers")
    result = run_def({"fe.yaml": text}, "fe_fast", {"numbers": [1, 2, 3, 4, 5, 6]})
    assert result["status"] == "failed"
    assert "item `n3` failed" in result["error"]
    assert "results" not in result["context"]


def test_foreach_string_collect(run_def):
    text = process("fe_str", {"numbers": "{type: array}", "out": "{type: array}"}, """
  start:
    type: foreach
    foreach: numbers
    as: n
    node: {type: tool, tool: double_unless, input: {value: "{{ n }}"}, writes: [doubled]}
    collect: out
    writes: [out]
    transitions: [{to: done}]
  done: {type: final}
""", required="numbers")
    result = run_def({"fe.yaml": text}, "fe_str", {"numbers": [5, 6]})
    assert result["context"]["out"] == [{"doubled": 10}, {"doubled": 12}]


def test_branch_runs_all_children_and_joins(run_def):
    text = process("br", {"reviews": "{type: array}", "topic": "{type: string}"}, """
  start:
    type: branch
    branches:
      - {id: legal, title: Legal, node: {type: tool, tool: mark, input: {name: legal, seconds: 0.3}}}
      - {id: finance, title: Finance, node: {type: tool, tool: mark, input: {name: finance, seconds: 0.3}}}
    collect: {into: reviews, include: [status, branch_id, output]}
    writes: [reviews]
    transitions: [{to: done}]
  done: {type: final}
""")
    result = run_def({"br.yaml": text}, "br")
    assert result["status"] == "completed", result
    reviews = result["context"]["reviews"]
    assert [r["branch_id"] for r in reviews] == ["legal", "finance"]
    assert all(r["status"] == "completed" for r in reviews)
    assert sorted(marks()) == ["finance", "legal"]
    kids = [v for v in visits(result["run_id"]) if v.parent_visit_id]
    starts = sorted(v.started_at for v in kids)
    ends = sorted(v.ended_at for v in kids)
    assert starts[1] < ends[0], "branches run in parallel"


def test_nested_subprocesses_by_name_and_inline(run_def):
    child = process("child_proc", {"x": "{type: integer}"}, """
  start:
    type: tool
    tool: increment
    input: {value: "{{ x }}"}
    transitions: [{to: done}]
  done: {type: final}
""", required="x")
    parent = process("parent_proc", {"x": "{type: integer}", "got": "{}", "inline": "{}"}, """
  start:
    type: process
    process: middle_proc
    input: {x: "{{ x }}"}
    returns: {from: context.got}
    writes: [got]
    transitions: [{to: inline_child}]
  inline_child:
    type: process
    process_definition:
      format_version: 1
      process: inline_one
      initial: a
      context: {schema: {type: object, properties: {v: {type: integer}}}, initial: {v: 41}}
      nodes:
        a: {type: tool, tool: increment, input: {value: "{{ v }}"}, writes: [], transitions: [{to: fin}]}
        fin: {type: final}
    returns: {from: outcome}
    writes: [inline]
    transitions: [{to: done}]
  done: {type: final}
""", required="x")
    middle = process("middle_proc", {"x": "{type: integer}", "got": "{}"}, """
  start:
    type: process
    process: child_proc
    input: {x: "{{ x }}"}
    returns: {from: outcome}
    writes: [got]
    transitions: [{to: done}]
  done: {type: final}
""", required="x")
    result = run_def({"child.yaml": child, "parent.yaml": parent, "middle.yaml": middle}, "parent_proc", {"x": 1})
    assert result["status"] == "completed", result
    assert result["context"]["got"] == "done"
    assert result["context"]["inline"] == "fin"
    from flows.store import runs as run_store

    kids = run_store.child_runs(result["run_id"])
    assert [k.definition_name for k in kids] == ["middle_proc", "inline_one"]
    grandkids = run_store.child_runs(kids[0].id)
    assert [g.definition_name for g in grandkids] == ["child_proc"]
    assert grandkids[0].trigger == "subprocess" and grandkids[0].status == "completed"


def test_sub_processes_nest_only_to_the_depth_cap(run_def, monkeypatch):
    """A chain deeper than ERGON_MAX_SUBPROCESS_DEPTH fails at the call that crosses it, with
    the reason, and every run of the chain ends (none is left running)."""
    monkeypatch.setenv("ERGON_MAX_SUBPROCESS_DEPTH", "2")
    files = {f"lvl{i}.yaml": process(f"lvl{i}", {"got": "{}"}, f"""
  start:
    type: process
    process: lvl{i + 1}
    writes: [got]
    transitions: [{{to: done}}]
  done: {{type: final}}
""") for i in range(3)}
    files["lvl3.yaml"] = process("lvl3", {"got": "{}"}, "\n  start: {type: final}\n")
    result = run_def(files, "lvl0")
    assert result["status"] == "failed"
    from flows.store import runs as run_store

    chain = [run_store.get_run(result["run_id"])]
    while kids := run_store.child_runs(chain[-1].id):
        chain.append(kids[0])
    assert [r.definition_name for r in chain] == ["lvl0", "lvl1", "lvl2"], "lvl3 was never started"
    assert "`lvl3` would nest 3 levels deep, more than the 2 allowed" in chain[-1].error
    assert all(r.status == "failed" for r in chain), [(r.definition_name, r.status) for r in chain]


def test_invalid_input_is_refused_before_running(run_def):
    import asyncio

    import pytest

    from flows import runs
    from flows.catalog import Catalog
    from flows.prefect.build import build_flow
    from flows.execution.inputs import validate_inputs
    from flows.store import runs as run_store

    text = process("needs_x", {"x": "{type: integer}"}, """
  start: {type: tool, tool: noop, transitions: [{to: done}]}
  done: {type: final}
""", required="x")
    with pytest.raises(runs.StartRefused) as refused:  # the run owner checks the inputs once, first
        run_def({"n.yaml": text}, "needs_x", {"x": "seven"})
    assert [(p.path, p.code) for p in refused.value.problems] == [("x", "invalid-input")]
    assert run_store.list_runs(definition="needs_x")[1] == 0, "nothing was recorded"
    plan = Catalog.load().compile("needs_x").plan
    problems = validate_inputs(plan, {"x": "seven", "y": 1})
    assert {p.path for p in problems} == {"x", "y"}
    # a flow run Prefect starts with a bad parameter (its UI, a deployment) is refused by Prefect
    state = asyncio.run(build_flow(plan)(x="seven", return_state=True))
    assert state.is_failed() and "invalid parameters" in state.message.lower()


def test_prefect_records_carry_node_names(run_def, prefect_api):
    import asyncio
    import time

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    from flows.store import runs as run_store

    text = process("named", {"a": "{type: integer}"}, """
  first: {type: tool, tool: noop, transitions: [{to: second}]}
  second: {type: tool, config: {context_update: {a: 2}}, writes: [a], transitions: [{to: done}]}
  done: {type: final}
""", initial="first")
    result = run_def({"named.yaml": text}, "named")
    run = run_store.get_run(result["run_id"])

    async def names() -> set[str]:
        async with get_client() as client:
            fr = await client.read_flow_run(run.prefect_flow_run_id)
            assert fr.name and fr.flow_version
            tasks = await client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[fr.id])))
            return {t.name for t in tasks}

    deadline = time.monotonic() + 20
    got: set[str] = set()
    while time.monotonic() < deadline:  # task runs reach Prefect's database through events
        got = asyncio.run(names())
        if {"first", "second"} <= got:
            break
        time.sleep(0.5)
    assert {"first", "second"} <= got


def test_each_run_of_one_plan_names_its_own_flow_run(prefect_api, store, definitions):
    """A Plan's flow is built once per process and shared by its runs and its sub-process visits:
    each run's flow run is still named after that run (how crash detection finds a flow run the
    run never recorded), and a sub-process's flow run is not named after its parent."""
    import asyncio

    from prefect.client.orchestration import get_client

    from flows import runs
    from flows.catalog import Catalog
    from flows.prefect.build import build_flow
    from flows.store import runs as run_store

    (definitions / "kid.yaml").write_text(process("kid", {"n": "{type: integer}"}, """
  start: {type: tool, tool: noop, transitions: [{to: done}]}
  done: {type: final}
"""))
    (definitions / "twice.yaml").write_text(process("twice", {"n": "{type: integer}"}, """
  start: {type: process, process: kid, transitions: [{to: again}]}
  again: {type: process, process: kid, transitions: [{to: done}]}
  done: {type: final}
"""))
    catalog = Catalog.load()
    compiled = catalog.compile("twice")
    first = runs.start(compiled, {}, catalog=catalog)
    second = runs.start(compiled, {}, catalog=catalog)
    assert (first.status, second.status) == ("completed", "completed")
    assert build_flow(compiled.plan) is build_flow(compiled.plan)

    async def flow_run_name(prefect_id: str) -> str:
        async with get_client() as client:
            return (await client.read_flow_run(prefect_id)).name

    for result in (first, second):
        run = run_store.get_run(result.run_id)
        assert asyncio.run(flow_run_name(run.prefect_flow_run_id)) == result.run_id
        children = run_store.child_runs(result.run_id)
        assert len(children) == 2 and all(c.status == "completed" for c in children)
        for child in children:
            assert asyncio.run(flow_run_name(child.prefect_flow_run_id)) not in {first.run_id, second.run_id, child.id}


def test_a_run_started_inside_a_flow_run_is_a_subflow_named_after_it(prefect_api, store, definitions):
    """A run started from inside someone's own Prefect flow is a subflow of that flow run, and
    its flow run is still named after the run (Prefect names it as it starts)."""
    from prefect import flow
    from prefect.client.orchestration import get_client

    from flows import runs
    from flows.catalog import Catalog
    from flows.store import runs as run_store

    (definitions / "inner.yaml").write_text(process("inner", {"n": "{type: integer}"}, """
  start: {type: tool, tool: noop, transitions: [{to: done}]}
  done: {type: final}
"""))

    @flow(persist_result=False)
    def outer() -> str:
        catalog = Catalog.load()
        return runs.start(catalog.compile("inner"), {}, catalog=catalog).run_id

    run_id = outer()
    run = run_store.get_run(run_id)
    assert run.status == "completed"
    with get_client(sync_client=True) as client:
        made = client.read_flow_run(run.prefect_flow_run_id)
    assert (made.name, made.parent_task_run_id is not None) == (run_id, True)

def test_condition_takes_first_matching_branch_else_default(run_def):
    text = process("router", {"amount": "{type: number}", "route": "{type: string}"}, """
  start:
    type: condition
    branches:
      - {to: big, when: {">": [{var: amount}, 1000]}, label: large}
      - {to: medium, when: {">": [{var: amount}, 100]}}
      - {to: small, default: true}
  big: {type: tool, config: {context_update: {route: big}}, writes: [route], transitions: [{to: done}]}
  medium: {type: tool, config: {context_update: {route: medium}}, writes: [route], transitions: [{to: done}]}
  small: {type: tool, config: {context_update: {route: small}}, writes: [route], transitions: [{to: rejected}]}
  done: {type: final}
  rejected: {type: final}
""", required="amount")
    outcomes = {}
    for amount in (5000, 500, 5):
        result = run_def({"router.yaml": text}, "router", {"amount": amount})
        outcomes[amount] = (result["context"]["route"], result["outcome"])
    assert outcomes == {5000: ("big", "done"), 500: ("medium", "done"), 5: ("small", "rejected")}
