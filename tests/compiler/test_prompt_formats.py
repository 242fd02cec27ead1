"""Prompt segments in the three formats of the seed's prompt pages (compiler.prompts).

Jinja2, Handlebars (``content_type: handlebars``) and JS templates (``content_type: jst``) are
checked by ``ergon check`` and rendered by the same modules, Handlebars and JST in the real V8
sandbox. The seed's own examples are used verbatim. Rendering through ``render_messages`` and a
real run on the offline model: tests/llm/test_interactions.py.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

import pytest

from compiler import check_workspace, workspace_from_texts
from compiler.ir import PromptSegment
from compiler.js.engine import JsError
from compiler.prompts import render
from compiler.templates import render as render_jinja

# --- the seed's examples, verbatim (prompt pages: Handlebars templates, JS templates) ---------

SEED_HBS_SUBSTITUTION = """Summarize the following {{document_type}} in {{target_language}}:

{{document_text}}"""

SEED_HBS_CONDITIONALS = """Analyze the following contract.
{{#if focus_area}}
Focus specifically on: {{focus_area}}
{{/if}}
{{#if strict_mode}}
Flag any non-compliant clauses.
{{else}}
Provide a general overview.
{{/if}}"""

SEED_HBS_EACH = """Review the following items:
{{#each items}}
- {{this.title}}: {{this.description}}
{{/each}}"""

SEED_JST_SUBSTITUTION = """`Summarize the following text in ${target_language}:

${document_text}`"""

SEED_JST_ITEMS = """`Review the following ${items.length} items:
${items.map((item, i) => `${i + 1}. ${item.title}: ${item.description}`).join('\\n')}

${strict_mode ? 'Flag any issues found.' : 'Provide a general overview.'}`"""

SCHEMA = {
    "type": "object",
    "properties": {
        "document_type": {"type": "string"}, "target_language": {"type": "string"}, "document_text": {"type": "string"},
        "focus_area": {"type": "string"}, "strict_mode": {"type": "boolean"},
        "items": {"type": "array", "items": {"type": "object", "properties": {
            "title": {"type": "string"}, "description": {"type": "string"}}}},
        "owner": {"type": "object", "properties": {"name": {"type": "string"}}},
        "notes": {"type": "array"},
        "data": {"type": "object"},
        "csv": {"type": "string"},
    },
}
ITEMS = [{"title": "Laptop", "description": "14 inch"}, {"title": "Dock", "description": "USB-C"}]


def seg(template: str, content_type: str = "handlebars") -> PromptSegment:
    return PromptSegment(role="user", template=template, content_type=content_type)  # type: ignore[arg-type]


def hbs(template: str, data: dict, model: str | None = "openai/gpt-x") -> str:
    return render(seg(template), data, model=model, input_schema=SCHEMA)


def jst(template: str, data: dict, model: str | None = "openai/gpt-x") -> str:
    return render(seg(template, "jst"), data, model=model, input_schema=SCHEMA)


def diagnostics(template: str, content_type: str, schema: dict | None = SCHEMA) -> list[tuple[str, str]]:
    import yaml

    doc = {"kind": "interaction", "name": "summarize",
           "prompts": [{"role": "user", "content_type": content_type, "template": template}]}
    if schema is not None:
        doc["input_schema"] = schema
    ws = workspace_from_texts({"summarize.yaml": yaml.safe_dump(doc, sort_keys=False)})
    return [(d.code, d.message) for d in check_workspace(ws).errors]


# --------------------------------------------------------------------------------------------
# Checking


@pytest.mark.parametrize(("template", "content_type"), [
    (SEED_HBS_SUBSTITUTION, "handlebars"), (SEED_HBS_CONDITIONALS, "handlebars"), (SEED_HBS_EACH, "handlebars"),
    ("Report generated at {{_now}} by {{_model}}. Input data: {{stringify items}}", "handlebars"),
    ("{{#with owner}}{{name}}{{/with}}{{#unless strict_mode}}lenient{{/unless}}", "handlebars"),
    (SEED_JST_SUBSTITUTION, "jst"), (SEED_JST_ITEMS, "jst"),
    ("`${_.stringify(items)} ${_.dayjs().year()} ${_model} ${JSON.stringify(owner)} ${Math.max(1, 2)}`", "jst"),
])
def test_the_seeds_examples_and_helpers_check_clean(template: str, content_type: str) -> None:
    assert diagnostics(template, content_type) == []


def test_a_handlebars_or_jst_segment_is_no_longer_refused() -> None:
    assert diagnostics("Summarize {{document_type}}", "handlebars", schema=None) == []
    assert diagnostics("`Summarize ${document_type}`", "jst", schema=None) == []


def test_js_interpolation_in_a_jinja_segment_is_refused_with_the_jst_hint() -> None:
    ws = workspace_from_texts({"s.yaml": "kind: interaction\nname: s\nprompts:\n  - role: user\n"
                                         "    template: \"Summarize in ${target_language}: {{ text }}\"\n"})
    [d] = check_workspace(ws).errors
    assert (d.code, d.path) == ("unsupported-template", "prompts[0].template")
    assert "`content_type: jst`" in (d.hint or "")


def test_handlebars_markup_in_a_jinja_segment_gets_the_handlebars_hint() -> None:
    ws = workspace_from_texts({"s.yaml": "kind: interaction\nname: s\nprompts:\n  - role: user\n"
                                         "    template: \"{{#if x}}a{{/if}}\"\n"})
    [d] = check_workspace(ws).errors
    assert d.code == "template-syntax" and "content_type: handlebars" in (d.hint or "")


def test_a_handlebars_syntax_error_is_located_in_the_file() -> None:
    text = ("kind: interaction\nname: s\nprompts:\n  - role: user\n    content_type: handlebars\n    template: |\n"
            "      Review:\n      {{#each items}}\n      - {{this.title}\n      {{/each}}\n")
    [d] = check_workspace(workspace_from_texts({"s.yaml": text})).errors
    assert (d.code, d.line, d.col) == ("template-syntax", 9, 21)
    assert d.message == "template does not parse: unexpected `}`"


def test_unknown_helpers_partials_and_helper_arity_are_reported() -> None:
    assert [c for c, _ in diagnostics("{{shout document_type}}", "handlebars")] == ["template-syntax"]
    assert "partials" in diagnostics("{{> footer}}", "handlebars")[0][1]
    assert "`#if` takes exactly one argument" in diagnostics("{{#if}}x{{/if}}", "handlebars")[0][1]
    assert [c for c, _ in diagnostics("{{log document_type}}", "handlebars")] == ["template-syntax"]


def test_handlebars_reads_are_checked_in_the_context_they_are_read_in() -> None:
    template = ("{{document_typ}} {{#each items}}{{this.title}} {{titel}} {{../document_type}} {{../focus_are}} "
                "{{@index}} {{@root.strict_mod}}{{/each}} {{#each items as |item|}}{{item.descriptio}}{{/each}} "
                "{{#with owner}}{{name}} {{nme}}{{/with}} {{#each notes}}{{this.anything}}{{/each}} "
                "{{#each data}}{{whatever}}{{/each}} {{#if focus_area}}{{focus_area}}{{else}}{{strict_mode}}{{/if}}")
    unknown = sorted(re.findall(r"`(\w+)` is read here", m)[0] for _, m in diagnostics(template, "handlebars"))
    assert unknown == ["descriptio", "document_typ", "focus_are", "nme", "strict_mod", "titel"]


def test_jst_free_identifiers_must_be_fields_helpers_or_globals() -> None:
    found = diagnostics("const total = items.length;\n`${total} ${undeclared} ${_.stringify(owner)} ${Date.now()} ${missing_fn()}`", "jst")
    assert [re.findall(r"`(\w+)`", m)[0] for _, m in found] == ["undeclared", "missing_fn"]
    assert diagnostics("`${require('fs')}`", "jst")[0][0] == "unknown-field"  # there is no `require` to call


def test_a_jst_syntax_error_has_its_line_and_column() -> None:
    [(code, message)] = diagnostics("const x = 1;\n`Summarize ${x", "jst")
    assert code == "template-syntax"
    assert message.endswith("Unexpected token (line 2, column 15 of the template)")  # at the end of the text


def test_without_declared_properties_no_field_is_reported() -> None:
    assert diagnostics("{{anything}} {{#each xs}}{{y}}{{/each}}", "handlebars", schema={"type": "object"}) == []
    assert diagnostics("`${anything}`", "jst", schema={"type": "object"}) == []


# --------------------------------------------------------------------------------------------
# Rendering Handlebars


def test_the_seeds_handlebars_examples_render_as_written() -> None:
    assert hbs(SEED_HBS_SUBSTITUTION, {"document_type": "contract", "target_language": "French",
                                       "document_text": "The parties agree..."}) == (
        "Summarize the following contract in French:\n\nThe parties agree...")
    assert hbs(SEED_HBS_CONDITIONALS, {"focus_area": "liability", "strict_mode": True}) == (
        "Analyze the following contract.\nFocus specifically on: liability\nFlag any non-compliant clauses.\n")
    assert hbs(SEED_HBS_CONDITIONALS, {"strict_mode": False}) == (  # `focus_area` absent: the #if is false
        "Analyze the following contract.\nProvide a general overview.\n")
    assert hbs(SEED_HBS_EACH, {"items": ITEMS}) == "Review the following items:\n- Laptop: 14 inch\n- Dock: USB-C\n"


def test_handlebars_helpers_now_model_stringify_with_unless() -> None:
    before = datetime.now(timezone.utc)
    text = hbs("at {{_now}} by {{_model}}: {{stringify items}} {{#with owner}}{{name}}{{/with}}"
               "{{#unless strict_mode}} lenient{{/unless}} {{lookup owner 'name'}}",
               {"items": ITEMS[:1], "owner": {"name": "Ann"}, "strict_mode": False})
    stamp, rest = re.fullmatch(r"at (\S+) (.*)", text).groups()
    assert before - timedelta(seconds=1) <= datetime.fromisoformat(stamp) <= datetime.now(timezone.utc)
    assert rest == 'by openai/gpt-x: [{"title":"Laptop","description":"14 inch"}] Ann lenient Ann'


def test_handlebars_does_not_html_escape_prompt_text() -> None:
    assert hbs("{{document_text}}", {"document_text": 'Tom & "Jerry" <tj@example.org>'}) == 'Tom & "Jerry" <tj@example.org>'


@pytest.mark.parametrize(("template", "data", "missing"), [
    ("Summarize {{document_type}}", {}, "document_type"),
    ("{{#each items}}- {{this.title}}\n{{/each}}", {"items": [{"description": "no title"}]}, "title"),
    ("{{#with owner}}{{name}}{{/with}}", {"owner": {}}, "name"),
])
def test_a_missing_field_is_an_error_not_an_empty_string(template: str, data: dict, missing: str) -> None:
    with pytest.raises(JsError, match=f"the field `{missing}` is missing"):
        hbs(template, data)


def test_stringify_of_a_missing_value_is_an_error() -> None:
    with pytest.raises(JsError, match="`stringify`: the value is missing"):
        hbs("{{stringify owner}}", {})


# --------------------------------------------------------------------------------------------
# Rendering JST


def test_the_seeds_jst_examples_render_as_written() -> None:
    assert jst(SEED_JST_SUBSTITUTION, {"target_language": "German", "document_text": "Hello."}) == (
        "Summarize the following text in German:\n\nHello.")
    assert jst(SEED_JST_ITEMS, {"items": ITEMS, "strict_mode": True}) == (
        "Review the following 2 items:\n1. Laptop: 14 inch\n2. Dock: USB-C\n\nFlag any issues found.")
    assert jst(SEED_JST_ITEMS, {"items": ITEMS[:1], "strict_mode": False}).endswith("Provide a general overview.")


def test_jst_helpers() -> None:
    csv = "name,qty\nbolt,3\nnut,5\n"
    text = jst("const rows = _.loadCsv(csv);\n"
               "`${rows.map(r => r.name + '=' + r.qty).join(';')}|${_.jsonToCsv(rows)}|${_.stringify(rows[0])}|"
               "${_.addLineNumbers('a\\nb')}|${_.dayjs('2024-02-29').add(1, 'day').format('YYYY-MM-DD')}|"
               "${_.dayjs.utc('2024-01-01T10:00:00Z').hour()}|${_model}`", {"csv": csv})
    assert text == ('bolt=3;nut=5|name,qty\r\nbolt,3\r\nnut,5|{"name":"bolt","qty":"3"}|1: a\n2: b|2024-03-01|10|openai/gpt-x')


def test_a_missing_field_in_jst_is_an_error_not_undefined() -> None:
    with pytest.raises(JsError, match=r"`\$\{focus_area\}` is undefined") as info:
        jst("`Focus:\n${focus_area}`", {})  # declared in the schema, absent from the data
    assert info.value.line == 2
    with pytest.raises(JsError, match=r"`\$\{item.note\}` is undefined"):
        jst("`${items.map(item => `${item.note}`).join()}`", {"items": ITEMS})
    with pytest.raises(JsError, match="ReferenceError: nowhere is not defined"):
        jst("`${nowhere}`", {})  # neither declared nor given
    assert jst("`${focus_area ?? 'none'} ${typeof owner}`", {}) == "none undefined"  # a test of an absent field works


def test_a_jst_template_must_end_with_a_string() -> None:
    with pytest.raises(JsError, match="the template's value is a number, not a string"):
        jst("1 + 1", {})


def test_a_jst_template_cannot_loop_forever() -> None:
    from compiler.js.engine import JsLimitError

    with pytest.raises(JsLimitError, match="time limit"):
        jst("while (true) {}\n`never`", {})


def test_bare_now_renders_the_current_time_in_jinja() -> None:
    before = datetime.now(timezone.utc)
    text = render_jinja("at {{ _now }} / {{ _now() }}", {})
    stamps = re.findall(r"at (\S+) / (\S+)", text)[0]
    for stamp in stamps:
        assert before - timedelta(seconds=1) <= datetime.fromisoformat(stamp) <= datetime.now(timezone.utc)


def test_a_jinja_segment_renders_with_the_model() -> None:
    assert render(seg("{{ document_type }} for {{ _model }}", "jinja"), {"document_type": "memo"}, model="m/1") == "memo for m/1"
