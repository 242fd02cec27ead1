"""The parameters and results of the built-in tools, as JSON types the checker can compare.

A project's Python tool is read from its type hints (:mod:`compiler.tool_signatures`); the
built-ins live in ``flows`` and are never imported by the compiler, so their signatures are
written here, in the same terms: each parameter's JSON types (None: any value), whether it must
be given, and the JSON types of the result. :meth:`compiler.tools.ToolCatalogue.signature`
returns them for a built-in that no Python tool replaces, so a tool node's arguments
(:mod:`compiler.passes.tool_calls`) and a workflow activity's ``params``
(:mod:`compiler.passes.lowered_kinds`) are held to them.

``tests/tools`` asserts that this table agrees with the registered tools' argument schemas and
return hints. ``set_context`` is no tool function (the engine applies its ``updates``): it has
no entry.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from compiler.catalog_tools import CATALOG_SIGNATURES
from compiler.tool_signatures import Parameter, Signature

_STRING = frozenset({"string"})
_INTEGER = frozenset({"integer"})
_NUMBER = frozenset({"number", "integer"})
_BOOLEAN = frozenset({"boolean"})
_ARRAY = frozenset({"array"})
_OBJECT = frozenset({"object"})
_NULL = frozenset({"null"})
_DOCUMENT = _STRING | _OBJECT  # a document id, or a document (a mapping with an `id`)

#: A parameter's JSON types (None: any) and whether it is required.
_Spec = tuple[frozenset[str] | None, bool]


def _sig(result: frozenset[str], **params: _Spec) -> Signature:
    return Signature({name: Parameter(name, kinds, required) for name, (kinds, required) in params.items()},
                     any_keyword=False, result=result)


def _object(**members: dict[str, Any]) -> dict[str, Any]:
    """An object that always holds ``members`` (and may hold others)."""
    return {"type": "object", "properties": members, "required": list(members)}


_STRING_SCHEMA: dict[str, Any] = {"type": "string"}

#: The whole result of the built-ins whose result is fixed by their code: what a step's
#: ``${output.member}`` reads is typed by it (``tests/tools`` runs the ones that need no store or
#: model and validates what they return).
_RESULTS: dict[str, dict[str, Any]] = {
    "noop": {"type": "object"},
    "log": _object(logged=_STRING_SCHEMA),
    "sleep": _object(slept={"type": "number"}),
    "createDocument": _object(document={"type": "object"}),
    "updateDocument": _object(document={"type": "object"}),
    "deleteDocument": _object(deleted=_STRING_SCHEMA),
    "extractText": _object(text=_STRING_SCHEMA, hasText={"type": "boolean"}),
    "executeInteraction": _object(result={}),
    "generateText": _object(text=_STRING_SCHEMA),
    "translateText": _object(translatedText=_STRING_SCHEMA),
    "summarizeText": _object(summary=_STRING_SCHEMA),
    "analyzeSentiment": _object(sentiment={"type": "string", "enum": ["positive", "negative", "neutral", "mixed"]}),
    "classifyText": _object(category=_STRING_SCHEMA),
    "extractEntities": _object(entities={"type": "array", "items": _object(text=_STRING_SCHEMA, type=_STRING_SCHEMA)}),
    "runJavascriptCode": _object(result={}),
    # a text's vectors, or the documents indexed: one of the two lists, and the model's name and size
    "generateEmbeddings": {"type": "object", "properties": {"embeddings": {"type": "array"}, "indexed": {"type": "array"},
                                                            "model": _STRING_SCHEMA, "dimensions": {"type": "integer"}},
                           "required": ["model", "dimensions"]},
    "searchEmbeddings": _object(results={"type": "array", "items": {"type": "object"}}, model=_STRING_SCHEMA),
    "send_email": _object(message_id=_STRING_SCHEMA, accepted={"type": "array", "items": _STRING_SCHEMA}),
}


_DECLARED: dict[str, Signature] = {
    # agents' working tools
    "think": _sig(_OBJECT, thought=(_STRING, True)),
    "plan": _sig(_OBJECT, steps=(_ARRAY, True)),
    "update_plan": _sig(_OBJECT, step_index=(_INTEGER, True), status=(_STRING, True), note=(_STRING | _NULL, False)),
    "write_artifact": _sig(_OBJECT, key=(_STRING, True), content=(None, True), type=(_STRING, False),
                           description=(_STRING | _NULL, False)),
    "read_artifact": _sig(_OBJECT, key=(_STRING, True), version=(_INTEGER | _NULL, False)),
    "list_artifacts": _sig(_ARRAY),
    "fetch_document": _sig(_OBJECT, id=(_STRING, True), max_chars=(_INTEGER, False)),
    "search_documents": _sig(_ARRAY, query=(_STRING, True), limit=(_INTEGER, False), collection_id=(_STRING | _NULL, False)),
    "create_document": _sig(_OBJECT, name=(_STRING, True), content=(_STRING | _NULL, False), source=(_STRING | _NULL, False)),
    "semantic_search_documents": _sig(_ARRAY, query=(_STRING, True), limit=(_INTEGER, False)),
    "http_request": _sig(_OBJECT, url=(_STRING, True), method=(_STRING, False), headers=(_OBJECT | _NULL, False),
                         body=(_STRING | _OBJECT | _ARRAY | _NULL, False)),
    "ask_user": _sig(_OBJECT, question=(_STRING, True), fields=(_ARRAY | _NULL, False)),
    "noop": _sig(_OBJECT),
    "log": _sig(_OBJECT, message=(None, True), level=(_STRING, False)),
    "sleep": _sig(_OBJECT, duration=(_NUMBER | _NULL, False), seconds=(_NUMBER | _NULL, False)),
    # workflow-DSL activities
    "createDocument": _sig(_OBJECT, type=(_STRING, True), properties=(_OBJECT | _NULL, False), content=(_STRING, False)),
    "updateDocument": _sig(_OBJECT, document=(_DOCUMENT, True), properties=(_OBJECT | _NULL, False),
                           content=(_STRING | _NULL, False)),
    "deleteDocument": _sig(_OBJECT, document=(_DOCUMENT, True)),
    "executeInteraction": _sig(_OBJECT, interaction=(_STRING, True), data=(_OBJECT | _NULL, False)),
    "extractText": _sig(_OBJECT, document=(_DOCUMENT, True)),
    "generateText": _sig(_OBJECT, prompt=(_STRING, True), data=(_OBJECT | _NULL, False)),
    "translateText": _sig(_OBJECT, text=(_STRING, True), targetLanguage=(_STRING, True)),
    "summarizeText": _sig(_OBJECT, text=(_STRING, True)),
    "analyzeSentiment": _sig(_OBJECT, text=(_STRING, True)),
    "classifyText": _sig(_OBJECT, text=(_STRING, True), categories=(_ARRAY, True)),
    "extractEntities": _sig(_OBJECT, text=(_STRING, True)),
    "runJavascriptCode": _sig(_OBJECT, code=(_STRING, True), data=(_OBJECT | _NULL, False)),
    "generateEmbeddings": _sig(_OBJECT, text=(_STRING | _ARRAY | _NULL, False), document=(_DOCUMENT | _ARRAY | _NULL, False),
                               type=(_STRING, False), force=(_BOOLEAN, False), model=(_STRING | _NULL, False)),
    "searchEmbeddings": _sig(_OBJECT, embeddings=(_ARRAY, True), limit=(_INTEGER, False), filter=(_OBJECT | _NULL, False),
                             model=(_STRING | _NULL, False)),
    # agents' workstream tools
    "launch_workstream": _sig(_OBJECT, id=(_STRING, True), name=(_STRING, True), instruction=(_STRING, True),
                              allowed_tools=(_ARRAY, True), context=(None, False), model=(_STRING | _NULL, False),
                              deadline_seconds=(_NUMBER, False), interactive=(_BOOLEAN, False)),
    "check_workstream": _sig(_OBJECT, launch_id=(_STRING, True)),
    "list_workstreams": _sig(_ARRAY, status_filter=(_STRING, False)),
    "get_workstream_result": _sig(_OBJECT, launch_id=(_STRING, True)),
    "message_workstream": _sig(_OBJECT, launch_id=(_STRING, True), message=(_STRING, True)),
    "steer_workstream": _sig(_OBJECT, launch_id=(_STRING, True), command=(_STRING, True), message=(_STRING, True)),
    "terminate_workstream": _sig(_OBJECT, launch_id=(_STRING, True)),
    # email (tools/email.yaml)
    "send_email": _sig(_OBJECT, to=(_ARRAY, True), subject=(_STRING, True), markdown=(_STRING, True),
                       cc=(_ARRAY | _NULL, False), bcc=(_ARRAY | _NULL, False)),
    # agents' skills (compiler.skills)
    "list_tools": _sig(_OBJECT, grep=(_STRING | _NULL, False)),
}

_DECLARED.update(CATALOG_SIGNATURES)  # the catalog's further tools (compiler.catalog_tools)

#: Built-in tool → its signature (with its whole result's schema where :data:`_RESULTS` has it).
BUILTIN_SIGNATURES: dict[str, Signature] = {name: dataclasses.replace(signature, result_schema=_RESULTS.get(name))
                                            for name, signature in _DECLARED.items()}


#: The built-in steps that ask a model, by tool name → the interaction their one structured model
#: call is (``flows.tools.builtins_activities``): what a run reports as called, and the name a
#: test mocks the model's answer under. The answer is the step's result: an object holding
#: exactly the members of the tool's result schema (:data:`BUILTIN_SIGNATURES`).
MODEL_STEPS: dict[str, str] = {name: f"sys:{name[0].upper()}{name[1:]}" for name in (
    "generateText", "translateText", "summarizeText", "analyzeSentiment", "classifyText", "extractEntities")}


def answer_schema(step: str, **members: dict[str, Any]) -> dict[str, Any]:
    """What the model must answer for the built-in ``step`` that asks one (:data:`MODEL_STEPS`):
    the step's declared result — the schema the checker types its output with — closed (every
    object holds exactly its declared members), with ``members`` replacing declared ones
    (``classifyText``'s category: one of the call's categories)."""
    declared = BUILTIN_SIGNATURES[step].result_schema or {"type": "object"}
    return _closed({**declared, "properties": {**declared.get("properties", {}), **members}})


def _closed(schema: dict[str, Any]) -> dict[str, Any]:
    if isinstance(schema.get("properties"), dict):
        return {**schema, "properties": {k: _closed(v) for k, v in schema["properties"].items()},
                "additionalProperties": False}
    if isinstance(schema.get("items"), dict):
        return {**schema, "items": _closed(schema["items"])}
    return schema
