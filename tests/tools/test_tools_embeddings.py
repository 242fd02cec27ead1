"""The embedding activities (``generateEmbeddings``, ``searchEmbeddings``) and the agents'
``semantic_search_documents``, called as tools are, on the offline embedder and a real store."""

from __future__ import annotations

import asyncio

import jsonschema
import pytest

from compiler.activity_values import PARAM_SCHEMAS, RESULT_SCHEMAS
from flows.llm.offline_embedding import DIMENSIONS, MODEL, embed_offline
from flows.tools.errors import ToolArgumentError, ToolError
from flows.tools.invoke import invoke

CLAUSES = {
    "delivery": "Delivery: the supplier ships the goods within 30 days of each purchase order.",
    "payment": "Payment: invoices are paid within 60 days; late payment carries interest.",
    "lunch": "The cafeteria serves a vegetarian lunch every Friday.",
}


def call(name, args=None):
    result = asyncio.run(invoke(name, args or {}))
    if name in RESULT_SCHEMAS:
        jsonschema.validate(result, RESULT_SCHEMAS[name])  # the result the checker's table declares
    return result


@pytest.fixture(autouse=True)
def _offline(monkeypatch):
    monkeypatch.delenv("ERGON_EMBEDDING_MODEL", raising=False)


@pytest.fixture
def clauses(home):
    from flows import documents

    return {key: documents.create(f"{key}.md", text, id=key, type="Clause") for key, text in CLAUSES.items()}


def test_the_checker_knows_each_parameter_of_the_embedding_activities():
    import flows.tools.builtins  # noqa: F401
    from flows.tools import REGISTRY

    for name, params in PARAM_SCHEMAS.items():
        assert set(params) == set(REGISTRY[name].parameters["properties"]), name


def test_index_documents_embed_a_question_and_find_the_document_that_answers_it(run_ctx, clauses):
    from flows.store import visits as visit_store

    indexed = call("generateEmbeddings", {"document": [clauses["delivery"], "payment", "lunch"]})
    assert indexed == {"indexed": [{"id": "delivery", "status": "embedded"}, {"id": "payment", "status": "embedded"},
                                   {"id": "lunch", "status": "embedded"}], "model": MODEL, "dimensions": DIMENSIONS}
    assert call("generateEmbeddings", {"document": "payment"})["indexed"] == [{"id": "payment", "status": "current"}]
    assert call("generateEmbeddings", {"document": "payment", "force": True})["indexed"] == [
        {"id": "payment", "status": "embedded"}]

    question = "When are late invoices paid, and with what interest?"
    got = call("generateEmbeddings", {"text": question})
    assert got["model"] == MODEL and got["dimensions"] == DIMENSIONS
    assert got["embeddings"] == [round(x, 7) for x in embed_offline(question)]
    assert call("generateEmbeddings", {"text": [question, "lunch"]})["embeddings"][0] == got["embeddings"]

    found = call("searchEmbeddings", {"embeddings": got["embeddings"], "limit": 2})
    assert [hit["id"] for hit in found["results"]] == ["payment", "delivery"] and found["model"] == MODEL
    assert found["results"][0]["snippet"] == CLAUSES["payment"] and found["results"][0]["score"] > 0.3

    # every embedding was recorded in the run: 3 documents, 1 forced again, 1 text, 2 texts; the
    # search found the index current and embedded nothing
    rows = visit_store.llm_calls_for_run(run_ctx.run_id, visit_id=run_ctx.visit_id)
    assert [row.response["count"] for row in rows] == [3, 1, 1, 2]
    assert all(row.offline and row.model == MODEL and row.cost_usd == 0 for row in rows)


def test_a_search_embeds_the_documents_added_or_changed_since_and_filters_by_metadata(run_ctx, clauses):
    from flows import documents

    call("generateEmbeddings", {"document": ["delivery", "payment", "lunch"]})
    documents.create("penalty.md", "Late delivery of goods costs the supplier a penalty.", id="penalty", type="Clause")
    documents.update("lunch", content="Goods are delivered to the cafeteria on Fridays.")
    documents.create("memo.md", "Delivery of goods is late again, says the memo.", id="memo", type="Memo")
    query = call("generateEmbeddings", {"text": "late delivery of goods"})["embeddings"]
    found = call("searchEmbeddings", {"embeddings": query, "filter": {"type": "Clause"}, "limit": 5})
    assert [hit["id"] for hit in found["results"]][0] == "penalty"  # added after the indexing step
    assert {hit["id"] for hit in found["results"]} == {"penalty", "delivery", "payment", "lunch"}
    lunch = next(hit for hit in found["results"] if hit["id"] == "lunch")
    assert lunch["snippet"].startswith("Goods are delivered")  # scored on its new text
    from flows import document_vectors

    assert document_vectors.current_vector("memo", MODEL) is None  # outside the filter: not embedded


def test_the_agents_search_documents_by_meaning(run_ctx, clauses):
    hits = call("semantic_search_documents", {"query": "paying invoices late", "limit": 1})
    assert [h["id"] for h in hits] == ["payment"] and set(hits[0]) == {"id", "name", "score", "snippet"}
    with pytest.raises(ToolError, match="empty"):
        call("semantic_search_documents", {"query": " "})


def test_what_the_activities_refuse(run_ctx, clauses):
    for args, message in [
        ({}, "exactly one of `text`"),
        ({"text": "a", "document": "payment"}, "exactly one of `text`"),
        ({"text": "a", "force": True}, "`force` re-embeds documents"),
        ({"text": []}, "`text` is an empty list"),
        ({"text": " "}, "input 0 is empty"),
        ({"document": []}, "`document` is an empty list"),
        ({"document": "no-such-document"}, "no document `no-such-document`"),
        ({"document": {"name": "payment.md"}}, "mapping with an `id`"),
        ({"text": "a", "model": "ergon/offline"}, "offline chat model"),
    ]:
        with pytest.raises(ToolError, match=message):
            call("generateEmbeddings", args)
    with pytest.raises(ToolArgumentError, match="type"):
        call("generateEmbeddings", {"document": "payment", "type": "image"})
    with pytest.raises(ToolArgumentError, match="limit"):
        call("searchEmbeddings", {"embeddings": [1.0], "limit": 51})
    with pytest.raises(ToolError, match="1 dimensions"):
        call("searchEmbeddings", {"embeddings": [1.0]})
