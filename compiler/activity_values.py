"""The values of the embedding activities' parameters, and the shapes of their results.

``compiler.tools.BUILTIN_TOOL_PARAMS`` names every built-in activity's parameters. For
``generateEmbeddings`` and ``searchEmbeddings`` the checker also holds the *values* written in a
step to what the activity takes (:func:`check_values`, called by the workflow checks of
:mod:`compiler.passes.lowered_kinds`), so that a step that checks clean does not fail on them at
run time:

* a literal value (one with no ``${}`` reference; a reference is only known at run time) is
  checked against :data:`PARAM_SCHEMAS` (``tool-params``);
* ``generateEmbeddings`` takes exactly one of ``text`` and ``document`` (``tool-params``): Ergon has
  no "current document", which the seed's intake workflow relies on; ``force`` re-embeds documents
  and means nothing with ``text``; a Vertesia embedding ``type`` other than ``text`` (``image``,
  ``properties``…) is ``dsl-unsupported``.

:data:`RESULT_SCHEMAS` are the results the activities return (:mod:`flows.tools.builtins_embeddings`);
a test holds the real results to them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import jsonschema

from compiler.errors import Finding
from compiler.lower import has_refs

_VECTOR: dict[str, Any] = {"type": "array", "items": {"type": "number"}, "minItems": 1}
_DOCUMENT_REF: dict[str, Any] = {"anyOf": [{"type": "string", "minLength": 1},
                                           {"type": "object", "required": ["id"], "properties": {"id": {"type": "string"}}}]}

#: Activity → parameter → (JSON Schema of a literal value, what it is in words).
PARAM_SCHEMAS: dict[str, dict[str, tuple[dict[str, Any], str]]] = {
    "generateEmbeddings": {
        "text": ({"anyOf": [{"type": "string", "minLength": 1},
                            {"type": "array", "items": {"type": "string", "minLength": 1}, "minItems": 1}]},
                 "a text or a non-empty list of texts"),
        "document": ({"anyOf": [_DOCUMENT_REF, {"type": "array", "items": _DOCUMENT_REF, "minItems": 1}]},
                     "a document id, a document (a mapping with an `id`) or a non-empty list of them"),
        "type": ({"enum": ["text"]}, "`text`"),
        "force": ({"type": "boolean"}, "`true` or `false`"),
        "model": ({"type": "string", "minLength": 1}, "a model string or an environment name"),
    },
    "searchEmbeddings": {
        "embeddings": (_VECTOR, "a non-empty list of numbers (a vector from `generateEmbeddings`)"),
        "limit": ({"type": "integer", "minimum": 1, "maximum": 50}, "a whole number from 1 to 50"),
        "filter": ({"type": "object"}, "a mapping of document fields to the values they must equal"),
        "model": ({"type": "string", "minLength": 1}, "a model string or an environment name"),
    },
}

#: Embedding types of the Vertesia platform that Ergon does not compute.
OTHER_EMBEDDING_TYPES = ("image", "vision", "properties", "code")

_HIT: dict[str, Any] = {"type": "object", "required": ["id", "name", "score", "snippet"], "additionalProperties": False,
                        "properties": {"id": {"type": "string"}, "name": {"type": "string"},
                                       "score": {"type": "number"}, "snippet": {"type": "string"}}}

#: Activity → JSON Schema of its result.
RESULT_SCHEMAS: dict[str, dict[str, Any]] = {
    "generateEmbeddings": {"anyOf": [
        {"type": "object", "required": ["embeddings", "model", "dimensions"], "additionalProperties": False,
         "properties": {"embeddings": {"anyOf": [_VECTOR, {"type": "array", "items": _VECTOR}]},
                        "model": {"type": "string"}, "dimensions": {"type": "integer", "minimum": 1}}},
        {"type": "object", "required": ["indexed", "model", "dimensions"], "additionalProperties": False,
         "properties": {"indexed": {"type": "array", "items": {
             "type": "object", "required": ["id", "status"], "additionalProperties": False,
             "properties": {"id": {"type": "string"}, "status": {"enum": ["embedded", "current", "empty"]}}}},
             "model": {"type": "string"}, "dimensions": {"type": ["integer", "null"], "minimum": 1}}},
    ]},
    "searchEmbeddings": {
        "type": "object", "required": ["results", "model"], "additionalProperties": False,
        "properties": {"results": {"type": "array", "items": _HIT}, "model": {"type": "string"}}},
}


def check_values(name: str, params: dict[str, Any], base: tuple) -> Iterator[Finding]:
    """Findings about the values of a step calling the built-in activity ``name`` (none for others)."""
    schemas = PARAM_SCHEMAS.get(name)
    if schemas is None:
        return
    at = (*base, "params")
    if name == "generateEmbeddings":
        kind = params.get("type", "text")
        if kind in OTHER_EMBEDDING_TYPES:
            yield Finding("dsl-unsupported", (*at, "type"), f"`{kind}` embeddings are not supported",
                          hint="Ergon embeds the text of documents only: `type: text` (the default)")
        given = [p for p in ("text", "document") if p in params]
        if not given:
            yield Finding("tool-params", at if params else (*base, "name"),
                          "activity `generateEmbeddings` needs `text` (to embed it) or `document` (to index it)",
                          hint="Ergon has no current document: name it, e.g. `document: \"${documentId}\"`, "
                               "or a list such as `${fetched}`")
        elif len(given) == 2:
            yield Finding("tool-params", (*at, "document"), "give `text` or `document`, not both",
                          hint="embed texts and index documents in two steps", at_key=True)
        if "force" in params and "text" in params:
            yield Finding("tool-params", (*at, "force"), "`force` re-embeds documents; a `text` is embedded on every call",
                          hint="remove `force`", at_key=True)
    for key, value in params.items():
        if key not in schemas or has_refs(value) or (key == "type" and value in OTHER_EMBEDDING_TYPES):
            continue
        schema, what = schemas[key]
        if not jsonschema.Draft202012Validator(schema).is_valid(value):
            yield Finding("tool-params", (*at, key), f"`{key}` of `{name}` is {what}")
