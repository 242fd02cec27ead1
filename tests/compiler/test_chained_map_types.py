"""An ``on_complete`` trigger's ``map`` feeds the upstream run's context into this definition's
inputs: a value the field's schema refuses would be refused at every completion, after the
upstream run is over — so ``ergon check`` refuses it (``write-type``)."""

from __future__ import annotations

from compiler import check_workspace, workspace_from_texts

UPSTREAM = """\
format_version: 1
process: upstream
initial: done
context:
  schema:
    type: object
    properties:
      approved: {type: boolean}
      note: {type: string}
      amount: {type: integer}
  initial: {approved: true, note: ok, amount: 3}
nodes:
  done: {type: final}
"""

DOWNSTREAM = """\
format_version: 1
process: downstream
initial: done
context:
  schema:
    type: object
    properties:
      decision: {{type: string}}
      count: {{type: integer}}
      total: {{type: number}}
triggers:
  - type: on_complete
    definition: upstream
    map:
      {field}: "{value}"
nodes:
  done: {{type: final}}
"""


def _found(field: str, value: str) -> list[str]:
    ws = workspace_from_texts({"up.yaml": UPSTREAM, "down.yaml": DOWNSTREAM.format(field=field, value=value)})
    return [f"{d.code} {d.line}:{d.col} {d.message}" for d in check_workspace(ws).diagnostics if d.file == "down.yaml"]


def test_a_field_passed_whole_must_be_of_a_type_the_input_takes():
    [found] = _found("decision", "{{ approved }}")
    assert found.startswith("write-type 15:") and "`approved` of `upstream`" in found and "`decision`" in found


def test_text_around_a_template_is_a_string():
    [found] = _found("count", "n={{ note }}")
    assert found.startswith("write-type 15:") and "renders text" in found


def test_values_the_input_takes_check_clean():
    assert _found("decision", "{{ note }}") == []
    assert _found("decision", "approved: {{ approved }}") == []  # text: a string, which `decision` takes
    assert _found("total", "{{ amount }}") == []  # an integer is a number
    assert _found("count", "{{ amount | default(0) }}") == []  # a filter: its type is not known statically
