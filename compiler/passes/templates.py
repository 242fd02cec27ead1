"""The `templates` pass: every Jinja2 template of a definition must parse (`template-syntax`).

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


def located(unit, code: str, path: DocPath, message: str, *, line: int = 1, hint: str | None = None) -> Finding:
    """A finding at line ``line`` of the template at ``path``.

    Only a block scalar (``|``/``>``) keeps template lines on file lines; elsewhere (a quoted
    string with ``\\n`` escapes, JSON) the finding points at the string and names the line.
    """
    if line > 1 and path in unit.source.block:
        return Finding(code, path, message, hint=hint, line_offset=line)
    if line > 1:
        message = f"{message} (line {line} of the template)"
    return Finding(code, path, message, hint=hint)


def name_line(text: str, name: str) -> int:
    """The template line on which markup first mentions ``name`` (1 when not found)."""
    word = re.compile(r"(?<![\w.])" + re.escape(name) + r"(?!\w)")
    for m in _MARKUP.finditer(text):
        found = word.search(m.group(1))
        if found is not None:
            return text.count("\n", 0, m.start(1) + found.start()) + 1
    return 1


def check(unit, ws) -> Iterator[Finding]:
    for path, text, _scope in iter_templates(unit.defn):
        problem = syntax_error(text)
        if problem is not None:
            message, line = problem
            yield located(
                unit, "template-syntax", path, f"template does not parse: {message}", line=line,
                hint="templates are Jinja2: `{{ field }}` inserts a value, `{% if %}…{% endif %}` is a block; "
                "quote a YAML value that starts with `{{`",
            )
