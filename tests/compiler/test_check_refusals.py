"""Settings `ergon check` refuses because a run would do something else with them.

* a process node whose guarded exits can all be false (``no-fallback``): the run would fail with
  "no transition matched"; guards proven to cover every case are fine, and a definition that
  declares supervision gets a warning (its supervisor is asked at such a node);
* supervision settings on a pipeline, or on a fan-out body (``wrong-control``, ``fanout-child``):
  nothing would ever read them;
* the seed's agent-template fields ``input_type``, ``is_active`` and ``version`` (``unknown-key``):
  refused, with what Ergon uses instead.
"""

from __future__ import annotations

import pytest
from checking import brief, diagnostics

PROCESS = """\
format_version: 1
process: p
initial: start
{header}context:
  schema:
    type: object
    properties:
      amount: {{type: number}}
      tier: {{type: string, enum: [low, mid, high]}}
      urgent: {{type: boolean}}
    required: [amount, tier, urgent]
nodes:
  start:
    type: tool
    config: {{context_update: {{}}}}
    transitions:
{exits}
  a: {{type: final}}
  b: {{type: final}}
  c: {{type: final}}
"""


def process(exits: list[str], header: str = "") -> str:
    return PROCESS.format(header=header, exits="\n".join(f"      - {e}" for e in exits))


def fallback_findings(text: str) -> list:
    return diagnostics(text, {"no-fallback"})


# --------------------------------------------------------------------------------------------
# (A) guards with no fallback


def test_a_node_whose_guards_can_all_be_false_is_refused_at_its_transitions():
    text = process(['{to: a, guard: {">": [{var: amount}, 1000]}}', '{to: b, guard: {"<": [{var: amount}, 100]}}'])
    (d,) = fallback_findings(text)
    assert brief([d]) == [("no-fallback", 16, 5)]  # the `transitions:` key of `start`
    assert d.severity == "error" and d.path == "nodes.start.transitions"
    assert "`start` has no fallback exit" in d.message and "no transition matched" in d.message
    assert "add a last transition without `guard`" in (d.hint or "")


def test_a_transition_without_guard_is_the_fallback():
    guarded = '{to: a, guard: {">": [{var: amount}, 1000]}}'
    assert fallback_findings(process([guarded, "{to: b}"])) == []
    assert fallback_findings(process([guarded, "{to: b, guard: true}"])) == []
    assert brief(fallback_findings(process([guarded, "{to: b, guard: false}"]))) == [("no-fallback", 16, 5)]


@pytest.mark.parametrize(
    ("complete", "gap"),
    [
        # every value of an enum field
        (['{to: a, guard: {"==": [{var: tier}, low]}}', '{to: b, guard: {"in": [{var: tier}, [mid, high]]}}'],
         ['{to: a, guard: {"==": [{var: tier}, low]}}', '{to: b, guard: {"==": [{var: tier}, mid]}}']),
        # both values of a boolean field
        (['{to: a, guard: {var: urgent}}', '{to: b, guard: {"==": [{var: urgent}, false]}}'],
         ['{to: a, guard: {var: urgent}}', '{to: b, guard: {"==": [{var: tier}, low]}}']),
        # a rule and its negation, whatever they test
        (['{to: a, guard: {">": [{var: amount}, 10]}}', '{to: b, guard: {"!": {">": [{var: amount}, 10]}}}'],
         ['{to: a, guard: {">": [{var: amount}, 10]}}', '{to: b, guard: {"<": [{var: amount}, 10]}}']),
        (['{to: a, guard: {"==": [{var: amount}, 3]}}', '{to: b, guard: {"!=": [{var: amount}, 3]}}'],
         ['{to: a, guard: {"==": [{var: amount}, 3]}}', '{to: b, guard: {"!=": [{var: amount}, 4]}}']),
    ],
    ids=["enum", "boolean", "negation", "not-equal"],
)
def test_guards_proven_to_cover_every_case_need_no_fallback(complete, gap):
    assert fallback_findings(process(complete)) == []
    assert brief(fallback_findings(process(gap))) == [("no-fallback", 16, 5)]


REVIEW = """\
format_version: 1
process: review
initial: review
context:
  schema:
    type: object
    properties:
      decision: {{type: string}}
nodes:
  review:
    type: human_task
    task:
      title: Approve?
      fields:
        - {{name: decision, type: select, {required}options: [approve, reject, request_edits]}}
    writes: [decision]
    transitions:
      - {{to: done, guard: {{"==": [{{var: decision}}, approve]}}}}
      - {{to: rejected, guard: {{"==": [{{var: decision}}, reject]}}}}
{last}  done: {{type: final}}
  rejected: {{type: final}}
"""


def test_a_review_routing_on_every_option_of_its_select_is_complete():
    """The seed's review step: the answer is copied into the context right before routing."""
    every = '      - {to: done, guard: {"==": [{var: decision}, request_edits]}}\n'
    assert fallback_findings(REVIEW.format(required="required: true, ", last=every)) == []
    # an option no guard takes, or an optional select the person may leave empty, is a gap
    assert brief(fallback_findings(REVIEW.format(required="required: true, ", last=""))) == [("no-fallback", 17, 5)]
    assert brief(fallback_findings(REVIEW.format(required="", last=every))) == [("no-fallback", 17, 5)]


def test_an_agent_picking_its_exit_is_not_routed_by_guards():
    text = process(['{to: a, guard: {">": [{var: amount}, 1000]}}']).replace(
        "    type: tool\n    config: {context_update: {}}\n", "    type: agent\n    prompt: Route it.\n")
    assert brief(fallback_findings(text)) == [("no-fallback", 16, 5)]
    agent_picks = text.replace("{to: a, guard:", "{to: a, trigger: agent, guard:")
    assert fallback_findings(agent_picks) == []


@pytest.mark.parametrize("header", ["run_type: supervised\n", "metadata:\n  supervisor: {allow_skip: false}\n"])
def test_a_definition_that_declares_supervision_gets_a_warning(header):
    text = process(['{to: a, guard: {">": [{var: amount}, 1000]}}'], header=header)
    (d,) = fallback_findings(text)
    assert d.severity == "warning" and d.code == "no-fallback"
    assert "a supervised run asks its supervisor" in d.message and "a programmatic run fails" in d.message


# --------------------------------------------------------------------------------------------
# (B) supervision settings where nothing acts on them


PIPELINE = """\
kind: pipeline
name: pl
{metadata}context:
  schema:
    type: object
    properties:
      x: {{type: integer}}
nodes:
  one:
    type: tool
    config: {{context_update: {{x: 1}}}}
    writes: [x]
{extra}"""


def refusals(text: str) -> list:
    return diagnostics(text, {"wrong-control", "fanout-child", "unknown-key", "supervisor-policy"})


def test_a_pipeline_refuses_a_supervisor_policy():
    text = PIPELINE.format(metadata="metadata:\n  supervisor: {allow_skip: true}\n", extra="")
    (d,) = refusals(text)
    assert brief([d]) == [("wrong-control", 4, 3)] and d.path == "metadata.supervisor"
    assert "a pipeline never runs supervised" in d.message
    assert "supervision applies to processes" in (d.hint or "") and "drop `metadata.supervisor`" in (d.hint or "")


def test_a_pipeline_refuses_run_limits_of_a_process():
    (d,) = refusals(PIPELINE.format(metadata="metadata:\n  max_visits: 50\n", extra=""))
    assert brief([d]) == [("wrong-control", 4, 3)] and "runs each node once" in d.message


def test_a_pipeline_node_refuses_skippable_and_a_supervisor_policy():
    text = PIPELINE.format(metadata="", extra="    skippable: true\n    metadata:\n      supervisor: {max_node_retries: 2}\n")
    found = {d.path: d for d in refusals(text)}
    assert brief(found.values()) == [("wrong-control", 13, 5), ("wrong-control", 15, 7)]
    assert "supervision applies to processes" in (found["nodes.one.skippable"].hint or "")
    assert "drop `skippable`" in (found["nodes.one.skippable"].hint or "")
    assert "drop `metadata.supervisor`" in (found["nodes.one.metadata.supervisor"].hint or "")


def test_a_pipeline_refuses_run_type_naming_what_to_do():
    (d,) = refusals(PIPELINE.format(metadata="run_type: supervised\n", extra=""))
    assert brief([d]) == [("unknown-key", 3, 1)]
    assert "a pipeline always runs programmatically" in d.message
    assert "supervision applies to processes" in (d.hint or "")


def test_a_fanout_body_refuses_supervision_settings():
    text = """\
format_version: 1
process: fan
initial: each
context:
  schema:
    type: object
    properties:
      items: {type: array, items: {type: integer}}
      out: {type: array}
    required: [items]
nodes:
  each:
    type: foreach
    foreach: items
    collect: out
    writes: [out]
    node:
      type: tool
      tool: increment
      input: {value: "{{ item }}"}
      skippable: true
    transitions: [{to: done}]
  done: {type: final}
"""
    (d,) = [d for d in diagnostics(text, {"fanout-child"}, tools=["increment"])]
    assert brief([d]) == [("fanout-child", 21, 7)]
    assert "move `skippable` to the parent `each` node" in (d.hint or "")


# --------------------------------------------------------------------------------------------
# (C) the seed's agent-template fields


TEMPLATE = """\
kind: template
name: t
input_form: intake
{field}
steps:
  - {{key: s, prompt: Summarize., output_key: s, output_form: intake}}
"""


@pytest.mark.parametrize(
    ("field", "says", "instead"),
    [
        ("input_type: submission", "does not say where its input comes from",
         ["`input_form` declares the input's shape", "--submission", "on_submission_created", "--input"]),
        ("is_active: false", "no on/off switch", ["`enabled: false`", "ergon schedules pause NAME"]),
        ('version: "2"', "numbers the versions of a definition itself",
         ["ergon publish NAME", "ergon versions NAME", "ergon run NAME --version N"]),
    ],
    ids=["input_type", "is_active", "version"],
)
def test_seed_template_fields_are_refused_with_what_ergon_uses_instead(field, says, instead):
    (d,) = diagnostics(TEMPLATE.format(field=field), {"unknown-key"})
    key = field.split(":")[0]
    assert brief([d]) == [("unknown-key", 4, 1)] and d.severity == "error"
    assert d.message.startswith(f"unknown key `{key}`: ") and says in d.message
    for words in instead:
        assert words in (d.hint or ""), words
    assert f"drop `{key}`" in (d.hint or "")
