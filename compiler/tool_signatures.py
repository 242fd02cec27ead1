"""The parameters and result of a project's Python tool, read from its type hints without importing it.

At run time a tool is called with its arguments validated against its type hints (pydantic,
:mod:`flows.tools`): an argument it does not take, a required one missing, or a value of a type
its parameter refuses fails the node as a ``definition`` error. The checker reads the same hints
statically, with :mod:`ast` (checking a definition never runs user code), to refuse those calls
before any run (:mod:`compiler.passes.tool_calls`).

A hint is read as the set of JSON types its values can have: ``str`` → string, ``int`` →
integer, ``float`` → number (integers included), ``bool`` → boolean, ``list``/``tuple``/``set``
and their generic forms → array, ``dict``/``Mapping`` and ``TypedDict``-like names → object when
spelled ``dict``, ``None`` → null, ``X | Y``/``Optional``/``Union`` → the union, ``Literal[...]``
→ the types of its values. Anything else (``Any``, a class of the tool's module, a string the
reader cannot parse) is *unknown*, and the checker says nothing about it: only what is certain
from the hints is refused.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: JSON types: what a value of each built-in hint can be
_NAMED: dict[str, frozenset[str]] = {
    "str": frozenset({"string"}),
    "int": frozenset({"integer"}),
    "float": frozenset({"number", "integer"}),
    "bool": frozenset({"boolean"}),
    "list": frozenset({"array"}), "List": frozenset({"array"}), "tuple": frozenset({"array"}),
    "Tuple": frozenset({"array"}), "set": frozenset({"array"}), "Set": frozenset({"array"}),
    "Sequence": frozenset({"array"}), "frozenset": frozenset({"array"}),
    "dict": frozenset({"object"}), "Dict": frozenset({"object"}), "Mapping": frozenset({"object"}),
    "None": frozenset({"null"}),
}


@dataclass(frozen=True)
class Parameter:
    """One parameter: its name, the JSON types it takes (None: unknown), whether it must be given."""

    name: str
    kinds: frozenset[str] | None
    required: bool


@dataclass(frozen=True)
class Signature:
    """What a tool takes and gives: its parameters, whether it takes any other keyword
    (``**kwargs``), and the JSON types of its result (None: unknown)."""

    parameters: dict[str, Parameter] = field(default_factory=dict)
    any_keyword: bool = False
    result: frozenset[str] | None = None
    #: the result's whole JSON schema, where it is known (the built-ins); None: only its types
    result_schema: dict[str, Any] | None = None
    #: the JSON types of a list result's items (``-> list[dict]``: objects); None: unknown
    result_items: frozenset[str] | None = None

    def result_shape(self) -> dict[str, Any] | None:
        """The result as a schema the checker compares: the whole one when known, else its
        types marked :data:`UNKNOWN_MEMBERS` (a ``dict`` or ``list`` hint says nothing of the
        members, and the checker does not hold them against a target); None: unknown."""
        if self.result_schema is not None:
            return self.result_schema
        if self.result is None:
            return None
        if self.result_items is not None:  # `list[X]`: the items are X, their members unknown
            return {"type": sorted(self.result), "$comment": UNKNOWN_MEMBERS,
                    "items": {"type": sorted(self.result_items), "$comment": UNKNOWN_MEMBERS}}
        return {"type": sorted(self.result), "$comment": UNKNOWN_MEMBERS}


#: The ``$comment`` of a result schema built from a type hint alone: its members are unknown,
#: and trusted to fit (a declared schema without ``items`` or ``properties`` takes any member,
#: and is not).
UNKNOWN_MEMBERS = "a tool's result, typed by its hint alone: members unknown"


def python_signatures(path: Path) -> dict[str, Signature]:
    """The signature of each ``@tool`` function of a Python file, by tool name (nothing when the
    file does not parse: ``compiler.tools`` then finds no tool in it either)."""
    from compiler.tools import tool_name  # the one reading of the decorator (tools imports this module)

    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except (SyntaxError, OSError, UnicodeDecodeError):
        return {}
    found: dict[str, Signature] = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            name = tool_name(node)
            if name is not None:
                found[name] = _signature(node)
    return found


def _signature(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> Signature:
    args = fn.args
    positional = [*args.posonlyargs, *args.args]
    first_default = len(positional) - len(args.defaults)
    params: dict[str, Parameter] = {}
    for i, arg in enumerate(positional):
        if i == 0 and arg.arg in ("self", "cls"):
            continue
        params[arg.arg] = Parameter(arg.arg, hint_kinds(arg.annotation), i < first_default)
    for arg, default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
        params[arg.arg] = Parameter(arg.arg, hint_kinds(arg.annotation), default is None)
    return Signature(params, args.kwarg is not None, hint_kinds(fn.returns), result_items=list_items(fn.returns))


def list_items(hint: ast.expr | None) -> frozenset[str] | None:
    """The JSON types of the items of a ``list[X]`` hint (``List[X]``, a quoted one too); None
    for any other hint, or items of unknown type."""
    if isinstance(hint, ast.Constant) and isinstance(hint.value, str):
        try:
            return list_items(ast.parse(hint.value, mode="eval").body)
        except SyntaxError:
            return None
    if not isinstance(hint, ast.Subscript) or isinstance(hint.slice, ast.Tuple):
        return None
    head = hint.value.id if isinstance(hint.value, ast.Name) else hint.value.attr if isinstance(hint.value, ast.Attribute) \
        else None
    return hint_kinds(hint.slice) if head in ("list", "List") else None


def hint_kinds(hint: ast.expr | None) -> frozenset[str] | None:
    """The JSON types of the values a type hint allows (see the module docstring); None: unknown."""
    if hint is None:
        return None
    if isinstance(hint, ast.Constant):
        if hint.value is None:
            return frozenset({"null"})
        if isinstance(hint.value, str):  # a quoted hint
            try:
                return hint_kinds(ast.parse(hint.value, mode="eval").body)
            except SyntaxError:
                return None
        return None
    if isinstance(hint, (ast.Name, ast.Attribute)):
        return _NAMED.get(hint.id if isinstance(hint, ast.Name) else hint.attr)
    if isinstance(hint, ast.BinOp) and isinstance(hint.op, ast.BitOr):
        return _union([hint.left, hint.right])
    if isinstance(hint, ast.Subscript):
        head = hint.value.id if isinstance(hint.value, ast.Name) else hint.value.attr if isinstance(hint.value, ast.Attribute) \
            else None
        parts = list(hint.slice.elts) if isinstance(hint.slice, ast.Tuple) else [hint.slice]
        if head == "Optional":
            return _union([*parts, ast.Constant(None)])
        if head == "Union":
            return _union(parts)
        if head == "Literal":
            kinds = set()
            for part in parts:
                if not isinstance(part, ast.Constant):
                    return None
                kinds.add(json_type(part.value))
            return frozenset(kinds)
        if head == "Annotated":
            return hint_kinds(parts[0])
        return _NAMED.get(head or "")
    return None


def _union(parts: list[ast.expr]) -> frozenset[str] | None:
    kinds: set[str] = set()
    for part in parts:
        one = hint_kinds(part)
        if one is None:
            return None
        kinds |= one
    return frozenset(kinds)


def json_type(value: object) -> str:
    """The JSON type of a Python value read from JSON or YAML (``integer`` apart from ``number``)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, (list, tuple)) else "object"
