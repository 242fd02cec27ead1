"""JST prompt segments (``content_type: jst``): JavaScript whose last expression is the prompt.

A JST template is a script, usually one template literal (`` `Summarize ${text}` ``), that may
declare variables, call functions and loop before its last expression, which must be a string.
It runs in the V8 sandbox (:mod:`compiler.js.engine`, a fresh isolate each time) and sees:

* the interaction's fields as variables — every property of ``input_schema`` and every key of the
  data; a declared field the data leaves out is ``undefined`` (so ``focus ? … : …`` can test it);
* ``_`` — ``_.stringify(value)`` (JSON), ``_.loadCsv(text)`` (CSV with a header row → objects),
  ``_.jsonToCsv(rows)``, ``_.addLineNumbers(text)`` (``1: …`` before each line), ``_.dayjs(date?)``
  (Day.js, with its ``utc`` plugin: ``_.dayjs.utc()``);
* ``_model`` — the model the call goes to;
* ECMAScript's built-ins.

A missing field is an error, not the word "undefined" in a prompt: before it runs, every
untagged template literal of the template gets a tag (``compiler/js/src/analysis.js``,
``prepareJst``) that renders it exactly as JavaScript would, but throws naming the ``${…}`` whose
value is ``undefined``.

The checker (:func:`syntax_error`, :func:`unknown_fields`) parses the template with acorn and asks
eslint-scope which identifiers no declaration of the template resolves (the global scope's
``through`` references); each must be a field of ``input_schema``, ``_``, ``_model`` or an
ECMAScript global. Without declared ``properties`` any name may be a field, and none is reported.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from compiler.prompts.fields import Unknown

__all__ = ["HELPER_NAMES", "render", "syntax_error", "unknown_fields"]

#: Names a JST template has besides its fields and ECMAScript's globals.
HELPER_NAMES = frozenset({"_", "_model"})


def syntax_error(text: str) -> tuple[str, int, int | None] | None:
    """``(message, line, 0-based column)`` when ``text`` is not valid JavaScript, else None."""
    from compiler.js.code import syntax_error as js_syntax_error

    return js_syntax_error(text)


def unknown_fields(text: str, fields: Iterable[str] | None, *, extra: Iterable[str] = HELPER_NAMES) -> list[Unknown]:
    """Free identifiers of ``text`` that are neither in ``fields``, ``extra`` nor ECMAScript
    globals, once per name (None ``fields``: any name may be one)."""
    if fields is None:
        return []
    from compiler.js.code import unknown_names

    fields = list(fields)
    declared = tuple(sorted(fields))
    return [Unknown(name, line, column, declared) for name, line, column in unknown_names(text, fields, extra)]


def render(text: str, data: Mapping[str, Any], *, model: str | None, fields: Iterable[str] = ()) -> str:
    """The template's value over ``data`` (``fields``: the declared fields, ``undefined`` when the
    data lack them); raises :class:`compiler.js.engine.JsError` or its ``JsLimitError``."""
    from compiler.js.engine import JsError, analyse, run

    prepared = analyse("prepareJst", text)
    if "error" in prepared:
        error = prepared["error"]
        column = error.get("column")
        raise JsError(f"SyntaxError: {error['message']}", error.get("line"), None if column is None else column + 1)
    names = sorted(set(fields) | set(data))
    shape = {"returns": prepared["returns"], "awaits": prepared["awaits"]}
    return str(run({"op": "jst", "code": prepared["code"], "data": dict(data), "fields": names,
                    "interpolations": prepared["interpolations"], "model": model, "shape": shape}))
