"""The `definite_assignment` pass (`maybe-unset`, `unknown-field` for template reads)."""

from __future__ import annotations

import pytest
from checking import diagnostics


def diags(text: str, *codes: str):
    return diagnostics(text, codes, file="d.yaml")


# The contract-review tutorial of the seed, as YAML (prompts shortened).
CONTRACT = """\
format_version: 1
process: contract_review
initial: extract_terms
context:
  schema:
    type: object
    properties:
      contract_doc_id: {type: string, format: document, editor: document}
      parties: {type: string}
      term_length: {type: string}
      governing_law: {type: string}
      total_value: {type: number}
      auto_renewal: {type: boolean}
      flagged_clauses: {type: array, items: {type: object}}
      has_critical_flag: {type: boolean}
      legal_decision: {type: string}
      legal_notes: {type: string}
      output_doc_id: {type: string}
    required: [contract_doc_id]
  initial:
    has_critical_flag: false
    auto_renewal: false
    flagged_clauses: []
nodes:
  extract_terms:
    type: agent
    prompt: "Extract the key terms from the contract at {{contract_doc_id}}."
    writes: [parties, term_length, governing_law, total_value, auto_renewal]
    transitions:
      - {to: flag_clauses, trigger: agent}
  flag_clauses:
    type: agent
    prompt: "Fetch the contract at {{contract_doc_id}} and flag risky clauses."
    writes: [flagged_clauses, has_critical_flag]
    transitions:
      - {to: risk_route, trigger: agent}
  risk_route:
    type: condition
    branches:
      - to: legal_review
        when:
          or:
            - {">": [{var: total_value}, 50000]}
            - {"==": [{var: has_critical_flag}, true]}
      - {to: auto_approve, default: true}
  legal_review:
    type: human_task
    writes: [legal_decision, legal_notes]
    task:
      title: "Legal Review Required: {{parties}}"
      assignee: group:legal
      fields:
        - {name: legal_decision, type: select, required: true, options: [approve, reject, request_edits]}
        - {name: legal_notes, type: text, required: false}
    transitions:
      - {to: store_output, guard: {"==": [{var: legal_decision}, approve]}}
      - {to: rejected, guard: {"==": [{var: legal_decision}, reject]}}
      - {to: flag_clauses, guard: {"==": [{var: legal_decision}, request_edits]}}
  auto_approve:
    type: tool
    config:
      context_update: {legal_decision: auto_approved}
    writes: [legal_decision]
    transitions:
      - {to: store_output}
  store_output:
    type: agent
    prompt: |
      # Contract Review
      ## Decision
      {{legal_decision}}
      ## Extracted Terms
      - Parties: {{parties}}
      - Total Value: ${{total_value}}
      ## Flagged Clauses
      {{flagged_clauses}}
      ## Legal Notes
      {{legal_notes}}
    writes: [output_doc_id]
    transitions:
      - {to: done, trigger: agent}
  done: {type: final}
  rejected: {type: final}
"""


def test_contract_review_reports_legal_notes_on_the_auto_approve_path():
    found = diags(CONTRACT, "maybe-unset", "unknown-field")
    assert len(found) == 1
    d = found[0]
    assert (d.code, d.path, d.line, d.col) == ("maybe-unset", "nodes.store_output.prompt", 78, 13)
    assert d.message == (
        "`legal_notes` may be unset here: the path extract_terms → flag_clauses → risk_route → auto_approve"
        " → store_output never sets it"
    )
    assert d.hint == "set it in context.initial, make it a required input, or write it on every path"


def test_contract_review_clean_with_initial_legal_notes():
    fixed = CONTRACT.replace("    flagged_clauses: []\n", '    flagged_clauses: []\n    legal_notes: ""\n')
    assert diagnostics(fixed, file="d.yaml") == []


def test_required_input_or_default_also_sets_a_field():
    as_input = CONTRACT.replace("required: [contract_doc_id]", "required: [contract_doc_id, legal_notes]")
    assert diags(as_input, "maybe-unset") == []
    with_default = CONTRACT.replace("legal_notes: {type: string}", 'legal_notes: {type: string, default: ""}')
    assert diags(with_default, "maybe-unset") == []
    guarded = CONTRACT.replace("      {{legal_notes}}\n", "      {{ legal_notes | default('none') }}\n")
    assert diags(guarded, "maybe-unset") == []


def test_loop_back_edge_keeps_fields_written_before_the_loop():
    # request_edits → flag_clauses: on the loop, legal_review's answer is set, and everything
    # extract_terms wrote stays set; flag_clauses may read `parties` (set on both entries)...
    text = CONTRACT.replace("and flag risky clauses.", "and flag risky clauses for {{parties}}.")
    assert [d.path for d in diags(text, "maybe-unset")] == ["nodes.store_output.prompt"]
    # ...but not `legal_notes`: the first visit comes straight from extract_terms
    text = CONTRACT.replace("and flag risky clauses.", "and flag risky clauses. Notes: {{legal_notes}}")
    found = diags(text, "maybe-unset")
    assert [d.path for d in found] == ["nodes.flag_clauses.prompt", "nodes.store_output.prompt"]
    assert "the path extract_terms → flag_clauses never sets it" in found[0].message


def test_loop_where_only_the_back_edge_sets_the_field():
    text = """\
format_version: 1
process: loop
initial: draft
context:
  schema:
    type: object
    properties: {feedback: {type: string}, text: {type: string}, ok: {type: boolean}}
nodes:
  draft:
    type: agent
    prompt: "Write a draft. Reviewer feedback: {{feedback}}"
    writes: [text]
    transitions: [{to: review}]
  review:
    type: human_task
    task: {title: "Review", fields: [{name: ok, type: boolean}, {name: feedback, type: text}]}
    writes: [ok, feedback]
    transitions:
      - {to: done, guard: {"==": [{var: ok}, true]}}
      - {to: draft}
  done: {type: final}
"""
    found = diags(text, "maybe-unset")
    assert [(d.path, d.message) for d in found] == [
        ("nodes.draft.prompt", "`feedback` may be unset here: the run starts at `draft` and nothing has set it yet"),
    ]


DIAMOND = """\
format_version: 1
process: diamond
initial: start
context:
  schema:
    type: object
    properties: {kind: {type: string}, a: {type: string}, both: {type: string}, only_left: {type: string}}
    required: [kind]
nodes:
  start:
    type: condition
    branches:
      - {to: left, when: {"==": [{var: kind}, left]}}
      - {to: right, default: true}
  left:
    type: tool
    config: {context_update: {both: l, only_left: x}}
    writes: [both, only_left]
    transitions: [{to: join}]
  right:
    type: tool
    config: {context_update: {both: r}}
    writes: [both]
    transitions: [{to: join}]
  join:
    type: agent
    prompt: "Both: {{both}}. Left: {{only_left}}."
    writes: [a]
    transitions:
      - {to: done, guard: {"==": [{var: only_left}, x]}}
      - {to: done}
  done: {type: final}
"""


def test_diamond_intersects_the_two_sides():
    found = diags(DIAMOND, "maybe-unset")
    # one report per reader node and field, at the first read (the prompt), not again at the guard
    assert [(d.path, d.line) for d in found] == [("nodes.join.prompt", 27)]
    assert "start → right → join never sets it" in found[0].message


def test_guard_on_exit_sees_own_writes_and_timeout_edge_does_not():
    text = """\
format_version: 1
process: timeout
initial: ask
context:
  schema:
    type: object
    properties: {answer: {type: string}}
nodes:
  ask:
    type: human_task
    task: {title: "Answer", fields: [{name: answer, type: text}]}
    writes: [answer]
    timeout: 1h
    on_timeout: late
    transitions:
      - {to: done, guard: {"!!": [{var: answer}]}}
      - {to: done}
  late:
    type: agent
    prompt: "Chase the answer {{answer}}"
    transitions: [{to: done}]
  done: {type: final}
"""
    found = diags(text, "maybe-unset")
    assert [d.path for d in found] == ["nodes.late.prompt"]
    assert "the path ask → late never sets it" in found[0].message


def test_foreach_as_name_in_scope_and_foreach_path_read():
    text = """\
format_version: 1
process: fe
initial: each
context:
  schema:
    type: object
    properties: {lines: {type: array}, results: {type: array}, currency: {type: string}}
nodes:
  each:
    type: foreach
    foreach: lines
    as: line
    item_id: "{{ line.id }}"
    node:
      type: tool
      tool: noop
      input: {line: "{{line}}", cur: "{{currency}}", who: "{{ customer }}"}
    collect: results
    writes: [results]
    transitions: [{to: done}]
  done: {type: final}
"""
    found = diags(text, "maybe-unset", "unknown-field")
    assert [(d.code, d.path) for d in found] == [
        ("maybe-unset", "nodes.each.foreach"),
        ("maybe-unset", "nodes.each.node.input.cur"),
        ("unknown-field", "nodes.each.node.input.who"),
    ]
    assert found[2].message == "`customer` is read here but `context.schema` does not declare it"


def test_unknown_field_did_you_mean_for_template_reads():
    text = CONTRACT.replace("Legal Review Required: {{parties}}", "Legal Review Required: {{partys}}")
    found = diags(text, "unknown-field")
    assert [(d.path, d.hint) for d in found] == [("nodes.legal_review.task.title", "did you mean `parties`?")]


def test_unreachable_reader_is_skipped():
    text = DIAMOND.replace("  done: {type: final}\n", "  done: {type: final}\n  orphan: {type: agent, prompt: '{{only_left}}', transitions: [{to: done}]}\n")
    assert [d.path for d in diags(text, "maybe-unset")] == ["nodes.join.prompt"]


PIPELINE = """\
kind: pipeline
name: pipe
context:
  schema:
    type: object
    properties: {doc: {type: string}, text: {type: string}, summary: {type: string}, out: {type: string}}
    required: [doc]
nodes:
  fetch: {type: agent, prompt: "Fetch {{doc}}", writes: [text]}
  summarize: {type: agent, prompt: "Summarize {{text}}", needs: [fetch], writes: [summary]}
  publish:
    type: agent
    prompt: "Publish {{summary}} of {{text}}"
    needs: [NEEDS]
    when: {"!!": [{var: summary}]}
    writes: [out]
"""


def test_pipeline_reads_need_transitive_writers():
    assert diags(PIPELINE.replace("NEEDS", "summarize"), "maybe-unset") == []  # text via fetch, transitively
    found = diags(PIPELINE.replace("NEEDS", "fetch"), "maybe-unset")
    assert [(d.path, d.line) for d in found] == [("nodes.publish.prompt", 13)]
    assert found[0].message == (
        "`summary` may be unset here: `publish` does not need (directly or indirectly) any node that writes it (`summarize`)"
    )
    assert found[0].hint.startswith("add `summarize` to `nodes.publish.needs`")


def test_inline_child_process_is_checked_against_its_own_context():
    text = DIAMOND.replace("  done: {type: final}\n", """\
  done: {type: final}
  sub:
    type: process
    process_definition:
      format_version: 1
      process: inner
      initial: s
      context: {schema: {type: object, properties: {x: {type: string}}}}
      nodes:
        s: {type: agent, prompt: "{{x}}", transitions: [{to: e}]}
        e: {type: final}
    transitions: [{to: done}]
""").replace("      - {to: done}\n  done", "      - {to: sub}\n  done")
    found = diags(text, "maybe-unset")
    assert [d.path for d in found] == ["nodes.join.prompt", "nodes.sub.process_definition.nodes.s.prompt"]


# --------------------------------------------------------------------------------------------
# nested paths through the object schemas

NESTED = """\
format_version: 1
process: nested
initial: summarise
context:
  schema:
    type: object
    properties:
      doc:
        type: object
        properties:
          text: {type: string}
          max_words: {type: integer}
          meta:
            type: object
            properties: {author: {type: string}}
            required: [author]
        required: [text]
      summary: {type: string}
    required: [doc]
nodes:
  summarise:
    type: agent
    prompt: "{PROMPT}"
    writes: [summary]
    transitions:
      - {to: done, trigger: agent}
  done: {type: final}
"""


def _nested(prompt: str):
    return diags(NESTED.replace("{PROMPT}", prompt), "maybe-unset")


def test_optional_nested_property_read_unguarded_is_maybe_unset():
    (d,) = _nested("Summarise {{ doc.text }} in {{ doc.max_words }} words.")
    assert "`doc.max_words` may be unset" in d.message and "optional property of `doc`" in d.message
    assert "is defined" in d.hint and "| default" in d.hint
    (d,) = _nested("{{ doc.max_words }} and {{ doc.max_words > 100 }}")  # printed and compared: fail when absent
    (d,) = _nested("{{ doc['max_words'] }}")
    assert "doc.max_words" in d.message


def test_optional_nested_property_guarded_or_required_is_fine():
    assert _nested("{{ doc.text }} {{ doc.max_words | default(200) }}") == []
    assert _nested("{% if doc.max_words is defined %}{{ doc.max_words }}{% endif %}{{ doc.text }}") == []
    assert _nested("{{ doc.max_words if doc.max_words is defined else 200 }}") == []
    # `meta` is optional; `author` is required inside it once `meta` is there
    (d,) = _nested("{{ doc.meta.author }}")
    assert "`doc.meta` may be unset" in d.message
    assert _nested("{% if doc.meta is defined %}{{ doc.meta.author }}{% endif %}") == []
    # undeclared nested paths make no claim (the schema says nothing about them)
    assert _nested("{{ doc.text.upper() }}") == []


def test_document_summary_template_guards_its_optional_form_field():
    from pathlib import Path

    from compiler import check_workspace, load_workspace

    root = Path(__file__).resolve().parents[2]
    ws = load_workspace([root / "definitions"])
    bad = [d for d in check_workspace(ws).diagnostics if d.code == "maybe-unset"]
    assert bad == []
    text = (root / "definitions" / "document_summary.yaml").read_text()
    assert "max_words | default(" in text


FORM = """\
kind: form
name: prefs
groups:
  - name: preferences
    required: true
    fields:
      - {name: audience, type: text, required: true}
      - {name: max_words, type: integer}
"""

TEMPLATE = """\
kind: template
name: summary_t
input_form: prefs
steps:
  - key: write
    prompt: |
      For a {{ input.preferences.audience }} reader,
      in {{ input.preferences.max_words }} words.
    output_key: summary
    output_form: prefs
"""


def test_template_prompt_reading_an_optional_form_field_is_maybe_unset():
    (d,) = diagnostics(TEMPLATE, ("maybe-unset",), file="t.yaml", others={"f.yaml": FORM})
    assert d.path == "steps[0].prompt" and "input.preferences.max_words" in d.message
    assert d.line == 8
    for fixed in ("max_words | default(200)", "max_words or 200"):
        text = TEMPLATE.replace("max_words }}", fixed + " }}")
        assert diagnostics(text, ("maybe-unset",), file="t.yaml", others={"f.yaml": FORM}) == []


def test_foreach_path_through_an_optional_property_is_maybe_unset():
    text = """\
    format_version: 1
    process: p
    initial: each
    context:
      schema:
        type: object
        properties:
          order:
            type: object
            properties: {lines: {type: array, items: {type: string}}, id: {type: string}}
            required: [REQUIRED]
        required: [order]
    nodes:
      each:
        type: foreach
        foreach: order.lines
        as: line
        node: {type: tool, tool: think, input: {thought: "{{ line }}"}}
        transitions: [{to: done}]
      done: {type: final}
    """
    (d,) = diags(text.replace("REQUIRED", "id"), "maybe-unset")
    assert d.path == "nodes.each.foreach" and "`order.lines` may be unset" in d.message
    assert diags(text.replace("REQUIRED", "id, lines"), "maybe-unset") == []


def test_truth_tests_guard_an_optional_nested_property_and_render_without_it():
    from jinja2.exceptions import UndefinedError

    from compiler.templates import render

    accepted = [
        "{% if doc.max_words %}at most {{ doc.max_words }} words{% endif %}",
        "{{ doc.max_words or 200 }}",
        "{% if not doc.max_words %}no limit{% endif %}",
        "{{ doc.max_words if doc.max_words else 200 }}",
        "{% if doc.meta and doc.meta.author %}{{ doc.meta.author }}{% endif %}",
    ]
    for prompt in accepted:
        assert _nested(prompt + "{{ doc.text }}") == [], prompt
        render(prompt, {"doc": {"text": "t"}})  # runs as written on a doc without the field
    refused = ["{{ doc.max_words and 1 }}", "{{ doc.text or doc.max_words }}", "{% if doc.max_words > 3 %}x{% endif %}"]
    for prompt in refused:
        assert [d.code for d in _nested(prompt)] == ["maybe-unset"], prompt
        with pytest.raises(UndefinedError):
            render(prompt, {"doc": {"text": ""}})
    with pytest.raises(UndefinedError):  # a missing top-level field still fails a truth test
        render("{% if nothing %}x{% endif %}", {})


FIXED_UPDATE = """\
format_version: 1
process: fixed
initial: set
context:
  schema:
    type: object
    properties:
      a: {type: string}
      b: {type: string}
nodes:
  set:
    type: tool
    config: {context_update: UPDATE}
    writes: [a, b]
    transitions: [{to: use}]
  use: {type: tool, tool: log, input: {message: "{{ a }} {{ b }}"}, transitions: [{to: done}]}
  done: {type: final}
"""


@pytest.mark.parametrize("update, unset", [("null", ["a", "b"]), ("{a: x}", ["b"]), ("{a: x, b: y}", [])])
def test_a_fixed_context_update_sets_only_the_fields_it_holds(update, unset):
    found = diags(FIXED_UPDATE.replace("UPDATE", update), "maybe-unset")
    assert sorted(d.message.split("`")[1] for d in found) == unset


def test_a_set_context_node_sets_only_the_fields_of_its_updates():
    text = FIXED_UPDATE.replace("config: {context_update: UPDATE}", "tool: set_context\n    input: {updates: {a: x}}")
    found = diags(text, "maybe-unset")
    assert [d.message.split("`")[1] for d in found] == ["b"]


def test_an_optional_number_of_a_task_may_be_left_out_so_it_is_not_sure_to_be_set():
    text = """\
format_version: 1
process: scored
initial: review
context:
  schema:
    type: object
    properties:
      score: {type: number}
      note: {type: string}
      ok: {type: string}
nodes:
  review:
    type: human_task
    task:
      title: Review
      fields:
        - {name: ok, type: select, options: [yes, no], required: true}
        - {name: score, type: number}
        - {name: note, type: text}
    writes: [ok, score, note]
    transitions: [{to: use}]
  use: {type: tool, tool: log, input: {message: "{{ ok }} {{ note }} {{ score }}"}, transitions: [{to: done}]}
  done: {type: final}
"""
    found = diags(text, "maybe-unset")
    assert [d.message.split("`")[1] for d in found] == ["score"]
