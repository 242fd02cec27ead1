"""The `javascript_steps` pass: the code of each ``runJavascriptCode`` workflow step.

* ``code-syntax`` — the ``code`` is not JavaScript that parses, with the line and column inside
  it (a ``${…}`` outside a template literal, the DSL's reference syntax, gets the hint to pass
  workflow values through ``data``; in ``code`` a ``${…}`` is JavaScript's own,
  :data:`compiler.tools.VERBATIM_PARAMS`);
* ``unknown-field`` — the code uses a name that it does not declare and that is neither a key of
  the step's ``data``, ``_`` (the helpers) nor a JavaScript global; checked when ``data`` is
  absent or written out as a mapping (a ``${ref}`` gives keys known only at run time);
* ``bad-value`` — ``code`` is not a string.

Only the built-in activity is checked: a Python tool of the same name replaces it.
"""

from __future__ import annotations

from collections.abc import Iterator

from compiler.errors import Finding, did_you_mean
from compiler.ir import WorkflowDef
from compiler.passes.templates import located

ACTIVITY = "runJavascriptCode"


def check(unit, ws) -> Iterator[Finding]:
    defn = unit.defn
    if not isinstance(defn, WorkflowDef) or ws.tools.builtin_params(ACTIVITY) is None:
        return
    for i, step in enumerate(defn.steps):
        if step.type != "activity" or step.name != ACTIVITY or "code" not in step.params:
            continue
        path = ("steps", i, "params", "code")
        code = step.params["code"]
        if not isinstance(code, str):
            yield Finding("bad-value", path, "`code` is the JavaScript to run, as text", hint="write it as a `|` block")
            continue
        from compiler.js import INSTALL_HINT, available

        if not available():  # V8 is an optional dependency: without it the step could not run
            yield Finding("dsl-unsupported", path,
                          f"`{ACTIVITY}` needs the JavaScript sandbox, whose package (mini-racer) is not installed",
                          hint=f"install it: `{INSTALL_HINT}`; or write the step as a Python tool")
            continue
        from compiler.js.code import syntax_error, unknown_names

        error = syntax_error(code)
        if error is not None:
            message, line, column = error
            hint = ("in `code`, `${…}` is JavaScript (inside a `template literal`): pass workflow values through "
                    "`data` (`data: {total: \"${total}\"}`) and use them as variables" if "${" in code else
                    "the code is a script whose last expression is the result, or a function body that `return`s it")
            yield located(unit, "code-syntax", path, f"the code does not parse: {message}", line=line, column=column, hint=hint)
            continue
        data = step.params.get("data", {})
        if not isinstance(data, dict):
            continue
        for name, line, column in unknown_names(code, data):
            yield located(unit, "unknown-field", path,
                          f"the code uses `{name}`, which is neither a key of the step's `data` nor a JavaScript global",
                          line=line, column=column,
                          hint=did_you_mean(name, data) or f"pass it in: `data: {{{name}: \"${{{name}}}\"}}`")
