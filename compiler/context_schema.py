"""What a definition's ``context.schema`` says about its fields, for the data-flow passes.

Small lookups shared by the guard, definite-assignment and write-race passes: which fields are
declared, which are set when a run starts, and which values an enum field allows; and for the
authoring and trigger passes, whether a literal value the definition gives a field (a fixed
``context_update``, a trigger's ``input``) fits that field's schema, as the run will check.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from compiler.ir import ContextSpec
from compiler.templates import is_template


def declared_properties(context: ContextSpec) -> dict[str, Any] | None:
    """The schema's ``properties``, or None when it declares none (then any field is allowed)."""
    props = context.schema_.get("properties")
    if isinstance(props, dict) and props:
        return props
    return None


def initially_set(context: ContextSpec) -> set[str]:
    """Fields set before the first node runs.

    Required inputs (the run refuses to start without them), ``context.initial`` keys, and
    properties that declare a ``default`` (the runtime fills defaults in at start).
    """
    schema = context.schema_
    out: set[str] = set()
    required = schema.get("required")
    if isinstance(required, list):
        out.update(r for r in required if isinstance(r, str))
    out.update(k for k in context.initial if isinstance(k, str))
    props = schema.get("properties")
    if isinstance(props, dict):
        out.update(name for name, prop in props.items() if isinstance(prop, dict) and "default" in prop)
    return out


def field_schema(context: ContextSpec, path: str) -> dict[str, Any] | None:
    """The schema of a dotted field path (``a.b`` → ``properties.a.properties.b``), if declared."""
    node: Any = context.schema_
    for segment in path.split("."):
        if not isinstance(node, dict):
            return None
        props = node.get("properties")
        if isinstance(props, dict) and segment in props:
            node = props[segment]
        elif segment.isdigit() and isinstance(node.get("items"), dict):
            node = node["items"]
        else:
            return None
    return node if isinstance(node, dict) else None


def allowed_values(schema: dict[str, Any] | None) -> list[Any] | None:
    """The closed set of values a field schema allows (``enum``, ``const``, or a oneOf of consts)."""
    if not isinstance(schema, dict):
        return None
    if isinstance(schema.get("enum"), list):
        return list(schema["enum"])
    if "const" in schema:
        return [schema["const"]]
    for key in ("oneOf", "anyOf"):
        options = schema.get(key)
        if isinstance(options, list) and options and all(isinstance(o, dict) and "const" in o for o in options):
            return [o["const"] for o in options]
    return None


def same_value(a: Any, b: Any) -> bool:
    """JSON equality: ``true`` is not ``1`` (Python's ``==`` says it is)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a is b
    return a == b


def literal_value_error(context: ContextSpec, field: str, value: Any) -> tuple[str, tuple] | None:
    """``(message, path inside the value)`` when the literal ``value`` given to ``field`` does not
    fit the field's schema; None when it fits, holds a template (known only at run time), or the
    field's schema cannot be judged alone (undeclared, ``$ref``, itself invalid)."""
    props = declared_properties(context)
    sub = props.get(field) if props else None
    if not isinstance(sub, dict) or _holds_template(value):
        return None
    text = json.dumps(sub, sort_keys=True, default=str)
    if "$ref" in text:
        return None
    try:
        err = best_match(_validator(text).iter_errors(value))
    except Exception:  # noqa: BLE001 - an invalid sub-schema is the bad-schema finding's business
        return None
    if err is None:
        return None
    where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err.absolute_path)
    return (f"`{field}{where}` is given {json.dumps(value, default=str)[:60]}, which `context.schema` refuses: "
            f"{err.message[:200]}", tuple(err.absolute_path))


@lru_cache(maxsize=1024)
def _validator(schema_text: str) -> Draft202012Validator:
    """A validator per distinct field schema (most fields share a handful of schemas)."""
    return Draft202012Validator(json.loads(schema_text))


def _holds_template(value: Any) -> bool:
    if isinstance(value, str):
        return is_template(value)
    if isinstance(value, dict):
        return any(_holds_template(v) for v in value.values())
    if isinstance(value, list):
        return any(_holds_template(v) for v in value)
    return False
