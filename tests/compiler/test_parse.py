"""Parse diagnostics (compiler/parse.py): hints name the valid choices."""

from __future__ import annotations

from checking import brief, diagnostics

NODE_PLACEHOLDER = """\
format_version: 1
process: p
initial: start
nodes:
  start:
    /* type */: agent
    transitions: [{to: done}]
  done: {type: final}
"""

TRIGGER_PLACEHOLDER = """\
format_version: 1
process: p
initial: start
nodes:
  start: {type: tool, tool: think, transitions: [{to: done}]}
  done: {type: final}
triggers:
  - {/* type */: cron}
"""


def test_missing_node_type_hint_lists_the_node_types():
    (d,) = diagnostics(NODE_PLACEHOLDER, ("missing-field",))
    assert brief([d]) == [("missing-field", 6, 5)]
    assert d.message == "missing `type`"
    assert d.hint == ("add `type:`; valid types are `agent`, `branch`, `condition`, `final`, `foreach`, "
                      "`human_task`, `interaction`, `process`, `tool`")


def test_missing_trigger_type_hint_lists_the_trigger_types():
    (d,) = diagnostics(TRIGGER_PLACEHOLDER, ("missing-field",))
    assert d.hint == ("add `type:`; valid types are `cron`, `interval`, `on_complete`, "
                      "`on_submission_created`, `on_submission_updated`, `webhook`")


def test_a_missing_format_version_hint_shows_the_line_to_add():
    (d,) = diagnostics("process: p\ninitial: done\nnodes:\n  done: {type: final}\n", ("missing-field",))
    assert d.message == "missing required field `format_version`"
    assert d.hint == "add the line `format_version: 1` at the top (the only version of the process document)"
