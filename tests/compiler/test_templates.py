"""compiler.templates (analysis, rendering, where templates are) and the `templates` pass."""

from __future__ import annotations

import pytest
from jinja2.exceptions import SecurityError, UndefinedError

from compiler import check_workspace, workspace_from_texts
from compiler.templates import (
    is_template,
    iter_templates,
    render,
    render_value,
    syntax_error,
    template_reads,
    template_required_reads,
)


def diags(text: str, code: str, file: str = "t.yaml"):
    report = check_workspace(workspace_from_texts({file: text}))
    return [d for d in report.diagnostics if d.code == code]


@pytest.mark.parametrize(
    ("text", "reads"),
    [
        ("no markup", set()),
        ("{{x}}", {"x"}),
        ("a {{ y.z[0] | stringify }} b {{ _now() }} {{ stringify(w) }}", {"y", "w"}),
        ("{% for i in items %}{{ i.name }} {{ loop.index }}{% endfor %}", {"items"}),
        ("{% set n = 3 %}{{ n }} {{ range(n) | list }}", set()),
        ("{{ a if a is defined else b }}", {"a", "b"}),
    ],
)
def test_template_reads(text, reads):
    assert template_reads(text) == reads


def test_required_reads_skip_default_and_defined_guards():
    text = "{% if notes is defined %}{{ notes }}{% endif %}{{ x | default('') }}{{ y }}"
    assert template_reads(text) == {"notes", "x", "y"}
    assert template_required_reads(text) == {"y"}


def test_syntax_error_reports_template_line():
    assert syntax_error("{{ ok }}") is None
    message, line = syntax_error("line one\nline two {{ x ")
    assert line == 2 and "end of print statement" in message
    message, line = syntax_error("{{ x | uppper }}")
    assert line == 1 and "uppper" in message and "upper" in message  # did-you-mean
    assert syntax_error("{{ not }}") is not None


def test_is_template():
    assert is_template("{{x}}") and is_template("{% if a %}{% endif %}") and is_template("{# c #}")
    assert not is_template("plain { braces }") and not is_template(42)


def test_render_and_native_values():
    assert render("Hello {{ who }}", {"who": "world"}) == "Hello world"
    assert render("{{ data | stringify }}", {"data": {"a": [1]}}) == '{"a": [1]}'
    value = render_value({"inv": "{{invoice}}", "n": "{{ n + 1 }}", "s": ["id={{ invoice.id }}"], "k": 3},
                         {"invoice": {"id": 7}, "n": 2})
    assert value == {"inv": {"id": 7}, "n": 3, "s": ["id=7"], "k": 3}
    with pytest.raises(UndefinedError):
        render("{{ missing }}", {})
    with pytest.raises(UndefinedError):
        render_value("{{ missing }}", {})


def test_render_is_sandboxed():
    with pytest.raises(SecurityError):
        render("{{ x.__class__.__mro__[1].__subclasses__() }}", {"x": 1})


PROCESS = """\
format_version: 1
process: p
initial: each
context:
  schema:
    type: object
    properties:
      invoices: {type: array}
      results: {type: array}
      title: {type: string}
    required: [invoices]
nodes:
  each:
    type: foreach
    foreach: invoices
    as: invoice
    item_id: "{{ invoice.id }}"
    node:
      type: tool
      tool: noop
      input: {inv: "{{invoice}}", nested: [{deep: "{{ title }}"}], fixed: 3}
    collect: results
    writes: [results]
    transitions: [{to: done}]
  done: {type: final}
"""


def test_iter_templates_paths_and_scopes():
    ws = workspace_from_texts({"p.yaml": PROCESS})
    sites = {path: (text, scope) for path, text, scope in iter_templates(ws.units[0].defn)}
    assert sites == {
        ("nodes", "each", "item_id"): ("{{ invoice.id }}", frozenset({"invoice"})),
        ("nodes", "each", "node", "input", "inv"): ("{{invoice}}", frozenset({"invoice"})),
        ("nodes", "each", "node", "input", "nested", 0, "deep"): ("{{ title }}", frozenset({"invoice"})),
    }


SYNTAX = """\
format_version: 1
process: p
initial: a
context:
  schema: {type: object, properties: {x: {type: string}}, required: [x]}
nodes:
  a:
    type: agent
    prompt: |
      First line {{ x }}
      second line {% if x %}
    writes: []
    transitions: [{to: b}]
  b:
    type: human_task
    task:
      title: "Check {{ x }"
    transitions: [{to: done}]
  done: {type: final}
"""


def test_pass_locates_block_scalar_line_and_quoted_string():
    found = diags(SYNTAX, "template-syntax")
    assert [(d.path, d.line) for d in found] == [("nodes.a.prompt", 11), ("nodes.b.task.title", 17)]
    assert found[1].col == 14
    assert "template does not parse" in found[0].message


def test_pass_checks_interaction_segments():
    text = """\
kind: interaction
name: i
prompts:
  - {role: user, template: "Hi {{ name }"}
"""
    found = diags(text, "template-syntax")
    assert [(d.path, d.line, d.col) for d in found] == [("prompts[0].template", 4, 28)]


def test_pass_checks_inline_child_process():
    text = PROCESS.replace(
        "  done: {type: final}\n",
        """\
  done: {type: final}
  child:
    type: process
    process_definition:
      format_version: 1
      process: inner
      initial: s
      nodes:
        s: {type: agent, prompt: "{{ broken", transitions: [{to: e}]}
        e: {type: final}
""",
    )
    found = diags(text, "template-syntax")
    assert [d.path for d in found] == ["nodes.child.process_definition.nodes.s.prompt"]


@pytest.mark.parametrize("text", [
    "{{ 'x' * 300000000 }}",
    "{{ 300000000 * 'x' }}",
    "{{ [1] * 300000000 }}",
    "{{ 9 ** 99999999 }}",
    "{{ '%300000000d' % 1 }}",
    "{{ '{:>300000000}'.format(1) }}",
    "{{ 'a' | center(300000000) }}",
    "{{ 'a\\nb' | indent(300000000) }}",
])
def test_rendering_refuses_values_beyond_the_size_cap(text):
    from compiler.templates import RenderError, render

    with pytest.raises(RenderError, match="1,000,000"):
        render(text, {})


def test_sizes_under_the_cap_render():
    from compiler.templates import render

    assert render("{{ 'ab' * 3 }}|{{ 2 ** 10 }}|{{ '%5d' % 42 }}|{{ 'a' | center(5) }}", {}) == "ababab|1024|   42|  a  "


def test_a_literal_size_bomb_is_found_by_the_check():
    from compiler.templates import syntax_error

    problem = syntax_error("Hello {{ 'x' * 300000000 }}")
    assert problem is not None and "1,000,000" in problem[0]


@pytest.mark.parametrize("text", ["{{ x | length }}", "n = {{ x | length }}"])
def test_a_filter_that_fails_on_its_value_is_a_template_error(text):
    # `None | length` raised a TypeError, which a run reported as an internal fault
    from jinja2.exceptions import TemplateError

    from compiler.templates import render_value

    with pytest.raises(TemplateError, match="fails on the value it is given: TypeError"):
        render_value(text, {"x": None})
    assert render_value("{{ x | length }}", {"x": [1, 2]}) == 2
