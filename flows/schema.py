"""JSON Schema validation shared by every layer: cached validators and readable errors.

A low module (it imports only jsonschema): the runtime checks context writes with it, the LLM
layer checks model answers and interaction inputs, the run owner checks run inputs. Compiling a
validator is the expensive part of a check, so validators are cached by the schema's text.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

import jsonschema


@lru_cache(maxsize=256)
def _validator(schema_json: str) -> Any:
    schema = json.loads(schema_json)
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    return cls(schema, format_checker=None)


def validator_for(schema: dict[str, Any]) -> Any:
    """A cached validator (a ``jsonschema`` ``Validator``) for ``schema``."""
    return _validator(json.dumps(schema, sort_keys=True))


def schema_errors(schema: dict[str, Any], value: Any) -> list[str]:
    """Readable validation errors of ``value`` against ``schema`` (empty when valid)."""
    out = []
    for err in sorted(validator_for(schema).iter_errors(value), key=lambda e: list(e.absolute_path)):
        where = ".".join(str(p) for p in err.absolute_path) or "(root)"
        # the message quotes the value: a long one is cut, never echoed whole into logs and errors
        message = err.message if len(err.message) <= 300 else err.message[:300] + "…"
        out.append(f"{where}: {message}")
    return out
