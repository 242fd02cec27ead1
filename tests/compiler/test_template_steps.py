"""The checker on template steps: mapping steps (no model) and `output_type: submission_update`,
against the example forms of ``definitions/forms``."""

from __future__ import annotations

from pathlib import Path

from compiler import check_workspace, workspace_from_texts

FORMS = {p.name: p.read_text() for p in (Path(__file__).parents[2] / "definitions" / "forms").glob("*.yaml")}

MAPPING = """\
# Mapping steps (no model): a step with both a prompt and a mapping, one with neither, a key
# naming no group of the output form, a field of a repeating group mapped on its own, a field
# the group lacks, and a model setting that a mapping step would ignore.
kind: template
name: lk_template_mapping
input_form: contract_input
steps:
  - key: both
    prompt: "Summarize {{ input.document.document_text }}"
    mapping: {summary.headline: "{{ input.document.document_id }}"}
    output_key: one
    output_form: summary_output
  - key: neither
    output_key: two
    output_form: summary_output
  - key: wrong_keys
    mapping:
      sumary.headline: "{{ input.document.document_id }}"
      summary.headlin: "{{ input.document.document_id }}"
    output_key: three
    output_form: summary_output
  - key: repeating
    mapping: {points.topic: "other"}
    tools_allowed: [think]
    output_key: four
    output_form: key_points
"""

UPDATE_WRITES_NOTHING = """\
# output_type submission_update writes the final step's values into the input submission's
# items of the same group and field; `summary_output` shares none with `contract_input`, so the
# run would write nothing: refused at the final step's output_form.
kind: template
name: lk_template_update_writes_nothing
input_form: contract_input
output_type: submission_update
steps:
  - key: summarize
    prompt: "Summarize {{ input.document.document_text }}"
    output_key: summary
    output_form: summary_output
"""


def _found(text: str) -> list[str]:
    ws = workspace_from_texts({**FORMS, "t.yaml": text}, tools=["think"])
    return [f"{d.code} {d.line}:{d.col}" for d in check_workspace(ws).diagnostics if d.file.endswith("t.yaml")]


def test_mapping_steps_are_checked_against_their_output_form():
    assert _found(MAPPING) == [
        "bad-value 8:5",       # both prompt and mapping
        "bad-value 13:5",      # neither
        "missing-field 18:7",  # the misspelt keys leave the required fields out
        "unknown-field 18:24",  # no group `sumary` (did you mean `summary`?)
        "unknown-field 19:24",  # no field `headlin`
        "bad-value 23:29",     # a field of a repeating group mapped on its own
        "bad-value 24:20",     # tools_allowed on a step that calls no model
    ]


def test_submission_update_that_would_write_nothing_is_refused():
    assert _found(UPDATE_WRITES_NOTHING) == ["output-type 12:18"]
    assert _found(UPDATE_WRITES_NOTHING.replace("output_type: submission_update", "output_type: report")) == []


STEP_TEMPLATES = """\
kind: template
name: step_templates
input_form: contract_input
steps:
  - key: s
    mapping:
      summary.headline: "{{ inptu.document.document_id }}"
      summary.body: "{{ input.document.nope }}"
      summary.risk_level: "{{ input.document.document_text | trimm }}"
    output_key: out
    output_form: summary_output
  - key: p
    parent: s
    prompt: "{{ later.summary.headline }} {{ out.summary.headlin }}"
    output_key: o2
    output_form: summary_output
  - key: q
    prompt: "{{ input.document.document_id }}"
    output_key: later
    output_form: summary_output
"""


def test_step_templates_are_checked_like_a_process_s():
    # a prompt or mapping expression that the run could not render is refused at check
    assert _found(STEP_TEMPLATES) == [
        "unknown-field 7:25",    # `inptu` (did you mean `input`?)
        "unknown-field 8:21",    # input.document has no field `nope`
        "template-syntax 9:27",  # no filter `trimm`
        "maybe-unset 14:13",     # `later` is written by step `q`, which does not come before `p`
        "unknown-field 14:13",   # out.summary has no field `headlin`
    ]


def test_submission_update_of_a_field_the_input_cannot_take_is_refused():
    # key_points' `topic` is a select of six options; an input form whose `topic` takes fewer
    narrow = FORMS["key_points.yaml"].replace("name: key_points", "name: narrow_points").replace(
        "[parties, term, payment, liability, termination, other]", "[parties, term]")
    text = """\
kind: template
name: narrowing
input_form: narrow_points
output_type: submission_update
steps:
  - key: redo
    prompt: "Again: {{ input.points }}"
    output_key: again
    output_form: key_points
"""
    ws = workspace_from_texts({**FORMS, "narrow.yaml": narrow, "t.yaml": text}, tools=["think"])
    found = [(d.code, d.message) for d in check_workspace(ws).diagnostics if d.file.endswith("t.yaml")]
    assert [c for c, _ in found] == ["output-type"] and "`points.topic`" in found[0][1]
    same = text.replace("output_form: key_points", "output_form: narrow_points")
    ws = workspace_from_texts({**FORMS, "narrow.yaml": narrow, "t.yaml": same}, tools=["think"])
    assert [d for d in check_workspace(ws).diagnostics if d.file.endswith("t.yaml")] == []
