"""The bounds of a run in its definition: ``metadata.supervisor.max_node_retries``,
``max_transitions``, ``max_commands`` and ``metadata.max_visits`` are checked by ``ergon check``
(code ``supervisor-policy``, with file, line and column), and the engine's defaults are the
compiler's."""

from __future__ import annotations

from checking import brief, diagnostics


def policy_diags(text: str) -> list:
    return diagnostics(text, {"supervisor-policy"}, file="bounded.yaml")


PROCESS = """\
format_version: 1
process: bounded
initial: work
metadata:
{metadata}
nodes:
  work:
    type: tool
    tool: noop
{node_metadata}
    transitions: [{{to: done}}]
  done: {{type: final}}
"""


def process(metadata: str, node_metadata: str = "") -> str:
    return PROCESS.format(metadata=metadata, node_metadata=node_metadata)


def test_bounds_in_range_are_accepted_at_process_and_node_level():
    text = process("  max_visits: 5000\n  supervisor: {max_node_retries: 0, max_transitions: 50, max_commands: 500}",
                   "    metadata: {supervisor: {max_node_retries: 10}}")
    assert policy_diags(text) == []


def test_wrong_types_and_ranges_are_refused_where_they_are_written():
    text = process("  max_visits: 0\n"
                   "  supervisor:\n"
                   "    max_node_retries: true\n"
                   "    max_transitions: \"5\"\n"
                   "    max_commands: 2.5\n",
                   "    metadata: {supervisor: {max_node_retries: 1001}}")
    diags = policy_diags(text)
    assert brief(diags) == [("supervisor-policy", 5, 15), ("supervisor-policy", 7, 23), ("supervisor-policy", 8, 22),
                            ("supervisor-policy", 9, 19), ("supervisor-policy", 15, 47)]
    assert all(d.file == "bounded.yaml" for d in diags)
    messages = [d.message for d in diags]
    assert messages == ["`max_visits` must be a whole number from 1 to 1000000",
                        "`max_node_retries` must be a whole number from 0 to 1000",
                        "`max_transitions` must be a whole number from 0 to 10000",
                        "`max_commands` must be a whole number from 0 to 100000",
                        "`max_node_retries` must be a whole number from 0 to 1000"]
    assert diags[0].hint == "max_visits defaults to 1000" and diags[1].hint == "max_node_retries defaults to 3"


def test_a_misspelt_bound_is_refused_with_the_key_meant():
    diags = policy_diags(process("  supervisor: {max_retries: 3}"))
    assert brief(diags) == [("supervisor-policy", 5, 16)]
    assert diags[0].message == "unknown supervisor policy key `max_retries`"
    assert diags[0].hint == "did you mean `max_node_retries`?"


def test_the_bounds_of_a_whole_run_are_refused_on_a_node():
    diags = policy_diags(process("  supervisor: {max_commands: 10}",
                                 "    metadata: {supervisor: {max_transitions: 2, max_commands: 3}}"))
    assert brief(diags) == [("supervisor-policy", 10, 29), ("supervisor-policy", 10, 49)]
    assert diags[0].message == "`max_transitions` bounds the whole run, not one node"
    assert diags[0].hint == "set it in the process's `metadata.supervisor.max_transitions`"


def test_the_engine_reads_the_compilers_defaults():
    from compiler import compile_plan, workspace_from_texts
    from flows.runtime.supervision import POLICY_KEYS, bound

    assert {"max_node_retries", "max_transitions", "max_commands"} <= set(POLICY_KEYS)
    ws = workspace_from_texts({"bounded.yaml": process("  supervisor: {max_transitions: 7}",
                                                       "    metadata: {supervisor: {max_node_retries: 9}}")})
    plan = compile_plan(ws, "bounded")
    assert bound(plan, None, "max_transitions") == 7
    assert bound(plan, None, "max_commands") == 100
    assert bound(plan, None, "max_node_retries") == 3
    assert bound(plan, plan.nodes["work"], "max_node_retries") == 9
