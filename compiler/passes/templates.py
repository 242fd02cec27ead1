"""The `templates` pass: every Jinja2 template of a definition must parse (`template-syntax`).

(Handlebars and JST prompt segments are the `prompts` pass's; a Jinja2 segment written in
Handlebars gets the hint to declare it so.)

Templates are prompts, human-task titles and descriptions, `input` mappings, `item_id`s,
interaction prompt segments and on-complete trigger maps (see
:func:`compiler.templates.iter_templates`). An unknown filter or test counts as a syntax error:
Jinja would only notice it when the template is first rendered, in the middle of a run.

Positions: the template's string; for a ``|`` block scalar, the line inside the template.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from compiler.errors import DocPath, Finding
from compiler.templates import iter_templates, syntax_error

_MARKUP = re.compile(r"\{[{%](.*?)[}%]\}", re.S)
# `{{#if`, `{{/each}}`, `{{^x}}`, `{{> partial}}`, `{{else}}`: Handlebars blocks, which Jinja2 cannot parse
_HANDLEBARS = re.compile(r"\{\{\s*(?:[#/^>]|else\s*\}\})")


def located(unit, code: str, path: DocPath, message: str, *, line: int = 1, column: int | None = None,
            hint: str | None = None) -> Finding:
    """A finding at line ``line`` (and 0-based ``column``, when known) of the template at ``path``.

    Only a block scalar (``|``/``>``) keeps template lines on file lines; elsewhere (a quoted
    string with ``\\n`` escapes, JSON) the finding points at the string and names the line.
    """
    if path in unit.source.block and column is not None:
        return Finding(code, path, message, hint=hint, line_offset=line,
                       col_override=unit.source.indent.get(path, 0) + column + 1)
    if line > 1 and path in unit.source.block:
        return Finding(code, path, message, hint=hint, line_offset=line)
    if column is not None:
        message = f"{message} (line {line}, column {column + 1} of the template)"
    elif line > 1:
        message = f"{message} (line {line} of the template)"
    return Finding(code, path, message, hint=hint)


def name_position(text: str, name: str) -> tuple[int, int | None]:
    """``(line, 0-based column)`` in the template where markup first mentions ``name``
    (``(1, None)`` when not found)."""
    word = re.compile(r"(?<![\w.])" + re.escape(name) + r"(?!\w)")
    for m in _MARKUP.finditer(text):
        found = word.search(m.group(1))
        if found is not None:
            at = m.start(1) + found.start()
            return text.count("\n", 0, at) + 1, at - (text.rfind("\n", 0, at) + 1)
    return 1, None


def name_line(text: str, name: str) -> int:
    """The template line on which markup first mentions ``name`` (1 when not found)."""
    return name_position(text, name)[0]


def check(unit, ws) -> Iterator[Finding]:
    for path, text, _scope in iter_templates(unit.defn):
        problem = syntax_error(text)
        if problem is not None:
            message, line = problem
            hint = ("templates are Jinja2: `{{ field }}` inserts a value, `{% if %}…{% endif %}` is a block; "
                    "quote a YAML value that starts with `{{`")
            if path[:1] == ("prompts",) and _HANDLEBARS.search(text):
                hint = "this looks like Handlebars: set `content_type: handlebars` on the segment, or write it in Jinja2"
            yield located(unit, "template-syntax", path, f"template does not parse: {message}", line=line, hint=hint)
