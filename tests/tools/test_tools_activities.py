"""Workflow-DSL activities registered as built-in tools (seed 002's activity table)."""

from __future__ import annotations

import asyncio

import pytest

from flows.tools.errors import ToolError
from flows.tools.invoke import invoke


def call(name, args=None):
    return asyncio.run(invoke(name, args or {}))


def test_the_checker_knows_the_registered_parameters_of_the_built_in_activities():
    import flows.tools.builtins  # noqa: F401
    from compiler.tools import BUILTIN_TOOL_PARAMS, BUILTIN_TOOLS
    from flows.tools import REGISTRY

    for name, (required, optional) in BUILTIN_TOOL_PARAMS.items():
        assert name in BUILTIN_TOOLS
        schema = REGISTRY[name].parameters
        assert set(schema["required"]) == set(required), name
        assert set(schema["properties"]) == set(required) | set(optional), name


def test_create_update_delete_document(run_ctx, home):
    from flows import documents

    created = call("createDocument", {"type": "Invoice", "properties": {"name": "inv-7", "amount": 120}, "content": "Invoice 7"})
    doc = created["document"]
    assert doc["type"] == "Invoice" and doc["properties"] == {"name": "inv-7", "amount": 120} and doc["name"] == "inv-7"
    assert documents.get(doc["id"])["content"] == "Invoice 7"

    updated = call("updateDocument", {"document": doc, "properties": {"status": "processing"}})["document"]
    assert updated["properties"] == {"name": "inv-7", "amount": 120, "status": "processing"}
    assert updated["created_at"] == doc["created_at"] and "updated_at" in updated
    assert documents.metadata(doc["id"])["properties"]["status"] == "processing"
    assert documents.get(doc["id"])["content"] == "Invoice 7"

    assert call("deleteDocument", {"document": doc["id"]}) == {"deleted": doc["id"]}
    with pytest.raises(documents.DocumentNotFound):
        documents.get(doc["id"])
    with pytest.raises(ToolError, match="no document"):
        call("deleteDocument", {"document": doc["id"]})


def test_text_activities_return_their_documented_fields_on_the_offline_model(run_ctx, monkeypatch):
    monkeypatch.delenv("ERGON_MODEL", raising=False)
    text = "Acme Corp signed the contract in Paris on 3 May; everyone was pleased."
    assert isinstance(call("generateText", {"prompt": "A title for {{ topic }}", "data": {"topic": "ships"}})["text"], str)
    assert isinstance(call("translateText", {"text": text, "targetLanguage": "French"})["translatedText"], str)
    assert isinstance(call("summarizeText", {"text": text})["summary"], str)
    assert call("analyzeSentiment", {"text": text})["sentiment"] in {"positive", "negative", "neutral", "mixed"}
    assert call("classifyText", {"text": text, "categories": ["contract", "invoice"]})["category"] in {"contract", "invoice"}
    entities = call("extractEntities", {"text": text})["entities"]
    assert isinstance(entities, list) and all(set(e) == {"text", "type"} for e in entities)


def test_extract_text_reads_the_document_store(run_ctx, home):
    from flows import documents

    doc = documents.create("note.txt", "Some text.")
    assert call("extractText", {"document": doc["id"]}) == {"text": "Some text.", "hasText": True}
    empty = documents.create("empty.txt", "  ")
    assert call("extractText", {"document": empty})["hasText"] is False
    with pytest.raises(ToolError, match="no document"):
        call("extractText", {"document": "missing-doc"})


def test_execute_interaction_needs_a_run(run_ctx):
    with pytest.raises(ToolError, match="inside a run"):
        call("executeInteraction", {"interaction": "summarize_text", "data": {}})


def test_run_javascript_code_returns_the_value_of_its_code_as_result():
    assert call("runJavascriptCode", {"code": "items.map(i => i * 2)", "data": {"items": [1, 2]}}) == {"result": [2, 4]}
    assert call("runJavascriptCode", {"code": "return {csv: _.jsonToCsv([{a: 1}])}"}) == {"result": {"csv": "a\r\n1"}}


def test_run_javascript_code_fails_with_the_sandboxs_message():
    with pytest.raises(ToolError, match=r"tool `runJavascriptCode`: ReferenceError: total is not defined \(line 1"):
        call("runJavascriptCode", {"code": "total * 2"})
    with pytest.raises(ToolError, match="SyntaxError: Unexpected token"):
        call("runJavascriptCode", {"code": "const = 1"})


def _schema_kinds(schema):
    """The JSON types a registered parameter's JSON schema takes (None: any), integer ⊂ number."""
    if "anyOf" in schema:
        parts = [_schema_kinds(s) for s in schema["anyOf"]]
        return None if any(p is None for p in parts) else frozenset().union(*parts)
    kind = schema.get("type")
    if kind is None:
        return None
    kinds = frozenset(kind if isinstance(kind, list) else [kind])
    return kinds | {"integer"} if "number" in kinds else kinds


def _result_kinds(fn):
    import inspect
    import typing

    hint = inspect.signature(fn, eval_str=True).return_annotation
    origin = typing.get_origin(hint) or hint
    return frozenset({"object"}) if origin is dict else frozenset({"array"}) if origin is list else None


def test_the_checker_knows_the_parameters_and_results_of_every_registered_built_in():
    import flows.tools.builtins  # noqa: F401
    from compiler.builtin_signatures import BUILTIN_SIGNATURES
    from compiler.tools import BUILTIN_TOOLS
    from flows.tools import REGISTRY

    assert set(BUILTIN_SIGNATURES) == {n for n in BUILTIN_TOOLS if n in REGISTRY}
    for name, signature in BUILTIN_SIGNATURES.items():
        schema = REGISTRY[name].parameters
        assert {p.name for p in signature.parameters.values() if p.required} == set(schema["required"]), name
        assert set(signature.parameters) == set(schema["properties"]), name
        for pname, param in signature.parameters.items():
            assert param.kinds == _schema_kinds(schema["properties"][pname]), (name, pname)
        assert signature.result == _result_kinds(REGISTRY[name].fn.__wrapped__ if hasattr(REGISTRY[name].fn, "__wrapped__")
                                                 else REGISTRY[name].fn), name


def test_what_the_built_ins_return_fits_the_whole_result_the_checker_reads(run_ctx, home, monkeypatch):
    """``${output.member}`` of a built-in's step is typed by ``compiler.builtin_signatures``'s
    result schema: each built-in that has one returns a value of it (on the offline model)."""
    import jsonschema

    from compiler.builtin_signatures import BUILTIN_SIGNATURES
    from flows import documents

    monkeypatch.delenv("ERGON_MODEL", raising=False)
    doc = documents.create("note.txt", "Some text.")
    text = "Acme Corp signed the contract in Paris on 3 May."
    calls = {
        "noop": {}, "log": {"message": {"any": "value"}}, "sleep": {"duration": 0},
        "createDocument": {"type": "Note", "content": "x"}, "updateDocument": {"document": doc["id"], "content": "y"},
        "extractText": {"document": doc["id"]}, "generateText": {"prompt": "A title"},
        "translateText": {"text": text, "targetLanguage": "French"}, "summarizeText": {"text": text},
        "analyzeSentiment": {"text": text}, "classifyText": {"text": text, "categories": ["contract", "invoice"]},
        "extractEntities": {"text": text}, "runJavascriptCode": {"code": "1 + 1"},
        "generateEmbeddings": {"text": "Some text."},
        "searchEmbeddings": {"embeddings": call("generateEmbeddings", {"text": "Some"})["embeddings"]},
        "deleteDocument": {"document": doc["id"]},
    }
    with_schema = {name for name, signature in BUILTIN_SIGNATURES.items() if signature.result_schema is not None}
    # send_email needs an SMTP server: tests/mail validates its result against the same schema
    assert with_schema - set(calls) == {"executeInteraction", "send_email"}, "every built-in with a whole result is run here"
    for name, args in calls.items():
        jsonschema.validate(call(name, args), BUILTIN_SIGNATURES[name].result_schema)
