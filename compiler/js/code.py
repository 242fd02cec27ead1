"""JavaScript code as a value: what it does not declare, whether it parses, and running it.

Used by JST prompt templates (:mod:`compiler.prompts.jst`) and the ``runJavascriptCode``
workflow activity. Code is written either as a script, whose value is that of its last
expression statement, or as a function body that ``return``s its value (and may ``await``):
code with a ``return`` or ``await`` outside its own functions is run as the body of a
(async) function. A Promise value is awaited, within the time limit. The activity's ``data``
are variables of the code; ``_`` has the helpers of JST templates (``_.stringify``,
``_.loadCsv``, ``_.jsonToCsv``, ``_.addLineNumbers``, ``_.dayjs``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from compiler.js.engine import MEMORY_LIMIT, TIME_LIMIT, analyse, global_names, run

__all__ = ["HELPERS", "free_names", "run_code", "syntax_error", "unknown_names"]

#: Names code has besides its variables and ECMAScript's globals.
HELPERS = frozenset({"_"})


def syntax_error(code: str) -> tuple[str, int, int | None] | None:
    """``(message, line, 0-based column)`` when ``code`` is not valid JavaScript, else None."""
    error = analyse("javascript", code).get("error")
    if error is None:
        return None
    return error["message"], error.get("line") or 1, error.get("column")


def free_names(code: str) -> list[tuple[str, int, int]]:
    """``(name, line, 0-based column)`` of each identifier the code uses without declaring it
    (eslint-scope's unresolved references), in order; empty when it does not parse."""
    return [(f["name"], f["line"], f["column"]) for f in analyse("javascript", code).get("free", [])]


def unknown_names(code: str, variables: Iterable[str], extra: Iterable[str] = HELPERS) -> list[tuple[str, int, int]]:
    """Free names of ``code`` that are neither ``variables``, ``extra`` nor ECMAScript globals,
    once per name."""
    known = set(variables) | set(extra) | global_names()
    out: list[tuple[str, int, int]] = []
    for name, line, column in free_names(code):
        if name not in known and all(seen != name for seen, _, _ in out):
            out.append((name, line, column))
    return out


def run_code(code: str, data: Mapping[str, Any], *, time_limit: float = TIME_LIMIT, memory_limit: int = MEMORY_LIMIT) -> Any:
    """The JSON value of ``code`` with ``data`` as its variables (see the module docstring);
    raises :class:`~compiler.js.engine.JsError` or :class:`~compiler.js.engine.JsLimitError`."""
    from compiler.js.engine import JsError

    analysis = analyse("javascript", code)
    if "error" in analysis:
        error = analysis["error"]
        column = error.get("column")
        raise JsError(f"SyntaxError: {error['message']}", error.get("line"), None if column is None else column + 1)
    shape = {"returns": analysis["returns"], "awaits": analysis["awaits"]}
    return run({"op": "code", "code": code, "data": dict(data), "shape": shape}, time_limit=time_limit, memory_limit=memory_limit)
