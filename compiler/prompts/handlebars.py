"""Handlebars prompt segments (``content_type: handlebars``): checked and rendered by handlebars.js.

Both halves go through the V8 sandbox (:mod:`compiler.js.engine`) with the compile options of
``compiler/js/src/handlebars_options.js``, so the checker and the runtime read a template the
same way:

* **noEscape** — prompt text is not HTML; escaping would hand the model ``&quot;`` and ``&amp;``
  for the author's quotes and ampersands;
* **strict** — ``{{field}}`` on a missing field is an error, never an empty string in a prompt,
  while helper arguments stay lenient: ``{{#if optional_field}}`` tests an absent field (as in
  Jinja, ``{{#if a.b}}`` needs ``a`` itself to be there);
* **knownHelpersOnly** — the helpers are ``#if``, ``#unless``, ``#each``, ``#with``, ``lookup``,
  ``stringify`` (JSON of a value), ``_now`` (the current UTC time, ISO 8601) and ``_model`` (the
  model the call goes to); any other helper, a partial or a decorator is reported by
  ``ergon check``.

**Which fields a template reads** (:func:`unknown_fields`): a path is checked against the schema of
the context it is read in. At the top that is the interaction's ``input_schema``; inside
``{{#each list}}`` it is the schema of ``list``'s items (``items``, or ``additionalProperties`` for
an object), inside ``{{#with x}}`` the schema of ``x``; ``../`` goes out one context, ``@root``
to the top, and ``as |item|`` names an item. Only the first segment of a path is checked, against
the ``properties`` of its context's schema. Where that schema is not known (no ``properties``,
a path through something undeclared, a block that is not a helper such as ``{{#list}}``) the
paths inside are not checked. ``@index``, ``@key``, ``@first`` and ``@last`` are data, not fields.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from compiler.prompts.fields import Unknown, declared_fields

__all__ = ["render", "syntax_error", "unknown_fields"]


def _analysis(text: str) -> dict[str, Any]:
    from compiler.js.engine import analyse

    return analyse("handlebars", text)


def syntax_error(text: str) -> tuple[str, int, int | None] | None:
    """``(message, line, 0-based column or None)`` when ``text`` does not compile, else None."""
    error = _analysis(text).get("error")
    if error is None:
        return None
    return error["message"], error.get("line") or 1, error.get("column")


def _properties(schema: Any) -> dict[str, Any] | None:
    props = schema.get("properties") if isinstance(schema, dict) else None
    return props if isinstance(props, dict) and props else None


def _items(schema: Any) -> Any:
    """The schema of what ``#each`` iterates over in a value of ``schema`` (None: unknown)."""
    if not isinstance(schema, dict):
        return None
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            return schema[key]
    return None


class _Scope:
    """The context schemas a reference may reach: the stack (innermost last) and block params."""

    def __init__(self, stack: list[Any], params: dict[str, Any]):
        self.stack, self.params = stack, params

    def base(self, ref: dict[str, Any]) -> tuple[Any, list[str]] | None:
        """(the schema a path starts from, the rest of the path), or None when it is not a field."""
        parts: list[str] = list(ref["ref"])
        if ref["data"]:  # @root.x, or @index / @key / @first / @last
            return (self.stack[0], parts[1:]) if parts[:1] == ["root"] else None
        if ref["depth"]:
            if ref["depth"] >= len(self.stack):
                return None
            return self.stack[-1 - ref["depth"]], parts
        if parts and parts[0] in self.params:
            return self.params[parts[0]], parts[1:]
        return self.stack[-1], parts

    def schema_of(self, ref: dict[str, Any] | None) -> Any:
        start = self.base(ref) if ref is not None else None
        if start is None:
            return None
        schema, parts = start
        for part in parts:
            props = _properties(schema)
            schema = props.get(part) if props is not None else None
        return schema

    def enter(self, schema: Any, names: list[str]) -> _Scope:
        """The scope inside a block whose context has ``schema``; ``as |a b|`` names it ``a``
        (``b``, an index or key, is not a field)."""
        params = dict(self.params)
        for i, name in enumerate(names):
            params[name] = schema if i == 0 else None
        return _Scope([*self.stack, schema], params)


def unknown_fields(text: str, input_schema: Mapping[str, Any] | None) -> list[Unknown]:
    """The fields ``text`` reads that the schema of their context does not declare (see the
    module docstring for which context that is); nothing when the template does not compile."""
    analysis = _analysis(text)
    if "outline" not in analysis or declared_fields(input_schema) is None:
        return []
    found: list[Unknown] = []

    def check(ref: dict[str, Any] | None, scope: _Scope) -> None:
        start = scope.base(ref) if ref is not None else None
        if ref is None or start is None or not start[1]:
            return
        schema, parts = start
        props = _properties(schema)
        if props is not None and parts[0] not in props:
            nested = schema is not scope.stack[0]  # read in an `#each` / `#with` context, not the input
            found.append(Unknown(parts[0], ref["line"], ref["column"], tuple(props), nested))

    def walk(nodes: list[dict[str, Any]], scope: _Scope) -> None:
        for node in nodes:
            if "ref" in node:
                check(node, scope)
                continue
            for arg in node["args"]:
                check(arg, scope)
            helper, names = node["block"], node["params"]
            if helper == "each":
                inner = scope.enter(_items(scope.schema_of(node["subject"])), names)
            elif helper == "with":
                inner = scope.enter(scope.schema_of(node["subject"]), names)
            elif helper in ("if", "unless"):
                inner = scope
            else:  # a block that is not a helper (`{{#list}}`): its context depends on the value
                inner = scope.enter(None, names)
            walk(node["body"], inner)
            walk(node["inverse"], scope)  # `{{else}}` runs in the block's own context

    walk(analysis["outline"], _Scope([dict(input_schema or {})], {}))
    return found


def render(text: str, data: Mapping[str, Any], *, model: str | None) -> str:
    """``text`` rendered over ``data``; raises :class:`compiler.js.engine.JsError` (a missing
    field, a helper's error) or :class:`~compiler.js.engine.JsLimitError`."""
    from compiler.js.engine import run

    return str(run({"op": "handlebars", "template": text, "data": dict(data), "model": model}))
