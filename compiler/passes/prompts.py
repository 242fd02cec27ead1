"""The `prompts` pass: each interaction prompt segment, in its own format (compiler.prompts).

* ``template-syntax`` — a Handlebars or JST segment does not parse or compile (a Jinja2
  segment's syntax is the ``templates`` pass's), with the line and column inside the template;
* ``unsupported-template`` — ``${…}`` in a Jinja2 segment, which would reach the model as
  written: the hint is ``content_type: jst``;
* ``unknown-field`` — a segment reads a field that ``input_schema`` does not declare (checked when
  it declares ``properties``; inside a Handlebars ``#each``/``#with``, against the item's or the
  value's schema where it is known: :mod:`compiler.prompts.handlebars`).

Positions: for a ``|`` block scalar, the file line and column of the place in the template;
elsewhere the template's string, with the line and column named in the message.
"""

from __future__ import annotations

from collections.abc import Iterator

from compiler.errors import Finding
from compiler.ir import InteractionDef
from compiler.passes.templates import located, name_position
from compiler.prompts import problems


def check(unit, ws) -> Iterator[Finding]:
    defn = unit.defn
    if not isinstance(defn, InteractionDef):
        return
    for i, segment in enumerate(defn.prompts):
        path = ("prompts", i, "template")
        for p in problems(segment, defn.input_schema):
            line, column = (p.line, p.column) if p.line is not None else name_position(segment.template, p.name or "")
            yield located(unit, p.code, path, p.message, line=line, column=column, hint=p.hint)
