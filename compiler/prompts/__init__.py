"""Interaction prompt segments in their three formats: the one place that knows all of them.

A segment's ``content_type`` picks its module, used alike by the checker
(``compiler.passes.prompts`` calls :func:`problems`) and the runtime
(``flows.llm.interactions.render_messages`` calls :func:`render`):

==============  ================================  ======================================
``jinja``       :mod:`compiler.templates`         Jinja2 in a sandbox, ``StrictUndefined``
``handlebars``  :mod:`compiler.prompts.handlebars`  handlebars.js in the V8 sandbox
``jst``         :mod:`compiler.prompts.jst`         a JavaScript template literal in the V8 sandbox
==============  ================================  ======================================

All three see the interaction's input fields, ``_model`` (the model the call goes to) and the
format's helpers, and fail on a missing field rather than put an empty string or "undefined" in
a prompt. Each read is checked against ``input_schema`` when it declares ``properties``. The V8
sandbox starts only for a Handlebars or JST segment.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from compiler.ir import PromptSegment
from compiler.prompts.fields import Unknown, declared_fields

__all__ = ["FORMATS", "Problem", "problems", "render", "render_errors"]

FORMATS = ("jinja", "handlebars", "jst")

_JS_INTERPOLATION = re.compile(r"\$\{[^}]*\}")


@dataclass(frozen=True, slots=True)
class Problem:
    """What the checker reports about a segment: where in the template (``line`` 1-based,
    ``column`` 0-based; None: find ``name`` in the text), what and how to fix it."""

    code: str
    message: str
    line: int | None
    column: int | None
    hint: str | None = None
    name: str | None = None


def _unknown(unknown: Unknown, fmt: str) -> Problem:
    from compiler.errors import choices_hint

    if unknown.nested:
        message = f"`{unknown.name}` is read here, but the schema of this `#each`/`#with` context does not declare it"
        what = "properties of this context"
    else:
        message = f"`{unknown.name}` is read here, but `input_schema` does not declare it"
        what = "fields of input_schema"
    hint = choices_hint(unknown.name, unknown.declared, what=what)
    if fmt == "jst":
        hint += " (JST templates also see `_`, `_model` and JavaScript's globals)"
    return Problem("unknown-field", message, unknown.line, unknown.column, hint, unknown.name)


def _syntax(fmt: str, found: tuple[str, int, int | None]) -> Problem:
    message, line, column = found
    hint = {
        "handlebars": "Handlebars: `{{field}}` inserts a value, `{{#if x}}…{{else}}…{{/if}}`, `{{#each items}}{{this.title}}{{/each}}`; "
                      "the helpers are if, unless, each, with, lookup, stringify, _now and _model",
        "jst": "a JST template is JavaScript whose last expression is the prompt, usually one template literal: `Summarize ${text}`",
    }[fmt]
    return Problem("template-syntax", f"template does not parse: {message}", line, column, hint)


def problems(segment: PromptSegment, input_schema: Mapping[str, Any] | None) -> list[Problem]:
    """What is wrong with one segment: its syntax (Handlebars, JST; a Jinja2 segment's is the
    ``templates`` pass's), JavaScript interpolation in a Jinja2 segment, reads of undeclared fields."""
    fields = declared_fields(input_schema)
    text = segment.template
    if segment.content_type == "jinja":
        from compiler.templates import template_reads

        out: list[Problem] = []
        found = _JS_INTERPOLATION.search(text)
        if found is not None:
            line = text.count("\n", 0, found.start()) + 1
            column = found.start() - (text.rfind("\n", 0, found.start()) + 1)
            out.append(Problem("unsupported-template",
                               f"`{found.group(0)}` is JavaScript-template interpolation, which a Jinja2 segment sends to the model as written",
                               line, column, "set `content_type: jst` to write the segment as a JS template "
                               "(then every `${…}` is JavaScript), or write `{{ x }}` for Jinja2"))
        if fields is not None:
            for name in sorted(template_reads(text) - set(fields)):
                out.append(_unknown(Unknown(name, None, None, tuple(fields)), "jinja"))
        return out
    from compiler.js import INSTALL_HINT, available

    if not available():  # Handlebars and JST are parsed and rendered by V8, an optional dependency
        return [Problem("unsupported-template",
                        f"a `{segment.content_type}` segment needs the JavaScript sandbox, whose package (mini-racer) "
                        "is not installed", None, None,
                        f"install it: `{INSTALL_HINT}`; or write the segment in Jinja2 (`content_type: jinja`)")]
    if segment.content_type == "handlebars":
        from compiler.prompts import handlebars

        error = handlebars.syntax_error(text)
        if error is not None:
            return [_syntax("handlebars", error)]
        return [_unknown(u, "handlebars") for u in handlebars.unknown_fields(text, input_schema)]
    from compiler.prompts import jst

    error = jst.syntax_error(text)
    if error is not None:
        return [_syntax("jst", error)]
    return [_unknown(u, "jst") for u in jst.unknown_fields(text, None if fields is None else list(fields))]


def render(segment: PromptSegment, data: Mapping[str, Any], *, model: str | None,
           input_schema: Mapping[str, Any] | None = None) -> str:
    """The segment's text over ``data``; raises one of :func:`render_errors`."""
    if segment.content_type == "jinja":
        from compiler.templates import render as render_jinja

        return render_jinja(segment.template, {**dict(data), "_model": model})
    if segment.content_type == "handlebars":
        from compiler.prompts import handlebars

        return handlebars.render(segment.template, data, model=model)
    from compiler.prompts import jst

    return jst.render(segment.template, data, model=model, fields=declared_fields(input_schema) or ())


def render_errors() -> tuple[type[Exception], ...]:
    """The exceptions :func:`render` raises for a template that fails on its data (a missing
    field, an error the template raised, a sandbox cap)."""
    from compiler.js.engine import JsError
    from compiler.templates import RenderError

    return (*RenderError, JsError)
