"""The `write_races` pass: concurrent writers of one field."""

from __future__ import annotations

from compiler import check_workspace, workspace_from_texts


def races(text: str):
    report = check_workspace(workspace_from_texts({"w.yaml": text}))
    return [d for d in report.diagnostics if d.code == "write-race"]


PIPELINE = """\
kind: pipeline
name: pipe
context:
  schema:
    type: object
    properties: {doc: {type: string}, text: {type: string}, summary: {type: string}}
    required: [doc]
nodes:
  fetch: {type: agent, prompt: "Fetch {{doc}}", writes: [text]}
  en: {type: agent, prompt: "English {{text}}", needs: [fetch], writes: [summary]}
  fr: {type: agent, prompt: "French {{text}}", needs: [NEEDS], writes: [summary]}
"""


def test_unordered_pipeline_siblings_race():
    found = races(PIPELINE.replace("NEEDS", "fetch"))
    assert [(d.path, d.line, d.col) for d in found] == [("nodes.fr.writes[0]", 11, 73)]
    assert found[0].message.startswith("`en` and `fr` both write `summary` and may run at the same time")
    assert found[0].hint.startswith("add `en` to `nodes.fr.needs`")


def test_ordered_writers_do_not_race():
    assert races(PIPELINE.replace("NEEDS", "en")) == []


def test_transitive_order_counts_and_each_racer_is_reported_once():
    text = """\
kind: pipeline
name: p
context: {schema: {type: object, properties: {x: {type: string}}}}
nodes:
  a: {type: tool, config: {context_update: {x: a}}, writes: [x]}
  b: {type: tool, tool: noop, needs: [a]}
  c: {type: tool, config: {context_update: {x: c}}, writes: [x], needs: [b]}
  d: {type: tool, config: {context_update: {x: d}}, writes: [x]}
  e: {type: tool, config: {context_update: {x: e}}, writes: [x], needs: [d]}
"""
    found = races(text)
    # a → b → c and d → e are ordered; across the two chains everything races. Each writer that
    # races an earlier one (in topological order a, d, e, c) is reported once, naming that one.
    assert [(d.path, d.message.split(" both")[0]) for d in found] == [
        ("nodes.c.writes[0]", "`d` and `c`"),
        ("nodes.d.writes[0]", "`a` and `d`"),
        ("nodes.e.writes[0]", "`a` and `e`"),
    ]


BRANCH = """\
format_version: 1
process: br
initial: review
context:
  schema:
    type: object
    properties: {doc: {type: string}, verdict: {type: string}, results: {type: array}, score: {type: number}}
    required: [doc]
nodes:
  review:
    type: branch
    branches:
      - id: legal
        node: {type: agent, prompt: "Legal {{doc}}", writes: [verdict]}
      - id: finance
        node: {type: agent, prompt: "Finance {{doc}}", writes: [verdict, score]}
      - id: tax
        node: {type: agent, prompt: "Tax {{doc}}", writes: [score]}
    COLLECT
    writes: [verdict, score]
    transitions: [{to: done}]
  done: {type: final}
"""


def test_branch_arms_writing_the_same_field_without_collect():
    found = races(BRANCH.replace("COLLECT", ""))
    assert [(d.path, d.line) for d in found] == [
        ("nodes.review.branches[1].node.writes[0]", 16),
        ("nodes.review.branches[2].node.writes[0]", 18),
    ]
    assert found[0].message == "branches `legal` and `finance` of `review` both write `verdict` and run at the same time"
    assert "`finance` and `tax`" in found[1].message


def test_branch_with_collect_is_fine():
    text = BRANCH.replace("COLLECT", "collect: results").replace("writes: [verdict, score]\n    transitions", "writes: [results]\n    transitions")
    assert races(text) == []


FOREACH = """\
format_version: 1
process: fe
initial: each
context:
  schema:
    type: object
    properties: {lines: {type: array}, code: {type: string}, results: {type: array}}
    required: [lines]
nodes:
  each:
    type: foreach
    foreach: lines
    as: line
    EXTRA
    node: {type: interaction, interaction: classify, input: {line: "{{line}}"}, writes: [code]}
    writes: [code]
    transitions: [{to: done}]
  done: {type: final}
"""


def test_foreach_items_race_unless_collected_or_sequential():
    found = races(FOREACH.replace("EXTRA", ""))
    assert [(d.path, d.line) for d in found] == [("nodes.each.node.writes", 15)]
    assert found[0].message == "every item of `each` writes `code`, and items run all at once: each item overwrites the others' result"
    assert "max_concurrency: 4" not in found[0].message
    assert races(FOREACH.replace("EXTRA", "max_concurrency: 1")) == []
    collected = FOREACH.replace("EXTRA", "collect: results").replace("    writes: [code]\n    transitions", "    writes: [results]\n    transitions")
    assert races(collected) == []
    # collected, but the foreach also declares the items' field: every item writes it
    assert [d.path for d in races(FOREACH.replace("EXTRA", "collect: results"))] == ["nodes.each.node.writes"]
    found = races(FOREACH.replace("EXTRA", "max_concurrency: 4"))
    assert "4 at a time" in found[0].message


def test_a_process_state_machine_alone_never_races():
    text = FOREACH.replace("EXTRA", "collect: results").replace("    writes: [code]\n    transitions", "    writes: [results]\n    transitions")
    assert races(text) == []
