"""The catalog's document tools — update_document, create_content_object, object types and
collections — called through ``flows.tools.invoke`` over a real document store (files under a
temporary ERGON_HOME) and a real HTTP server on localhost."""

from __future__ import annotations

import asyncio

import pytest

from flows import documents
from flows.tools.errors import ToolError
from flows.tools.invoke import invoke


def call(name, args=None):
    return asyncio.run(invoke(name, args or {}))


INVOICE = {"type": "object", "required": ["total"], "properties": {"total": {"type": "number", "minimum": 0}}}


def test_update_document_replaces_text_merges_properties_and_takes_an_artifact(run_ctx, home):
    doc = documents.create("memo.md", "first text", properties={"status": "draft", "owner": "ann"})
    updated = call("update_document", {"id": doc["id"], "properties": {"status": "final"}})
    assert updated["properties"] == {"status": "final", "owner": "ann"} and "updated_at" in updated
    assert documents.get(doc["id"])["content"] == "first text"
    call("write_artifact", {"key": "out/memo.md", "content": "second text"})
    call("update_document", {"id": doc["id"], "source": "artifact:out/memo.md"})
    assert documents.get(doc["id"])["content"] == "second text"
    call("update_document", {"id": doc["id"], "content": "third"})
    assert documents.get(doc["id"])["content"] == "third"
    with pytest.raises(ToolError, match="no document `nope`"):
        call("update_document", {"id": "nope", "content": "x"})
    with pytest.raises(ToolError, match="give `content` or `source`, not both"):
        call("update_document", {"id": doc["id"], "content": "x", "source": "artifact:out/memo.md"})


def test_object_types_are_json_schemas_that_check_documents_properties(run_ctx, home):
    created = call("create_or_update_object_type", {"name": "Invoice", "description": "A supplier invoice", "schema": INVOICE})
    assert created["created"] and created["nonconforming"] == []
    good = documents.create("inv1.txt", "Invoice 1", type="Invoice", properties={"total": 10})
    bad = documents.create("inv2.txt", "Invoice 2", type="Invoice", properties={})
    fetched = call("get_object_type", {"name": "Invoice"})
    assert fetched["schema"] == INVOICE and fetched["description"] == "A supplier invoice" and fetched["document_count"] == 2
    # updating a document of the type is held to its schema
    with pytest.raises(ToolError, match=r"do not fit object type `Invoice`: total: -5 is less than the minimum of 0"):
        call("update_document", {"id": good["id"], "properties": {"total": -5}})
    assert documents.metadata(good["id"])["properties"] == {"total": 10}
    # an update of the type keeps what is not given and reports documents the new schema rejects
    stricter = {**INVOICE, "required": ["total", "currency"]}
    updated = call("create_or_update_object_type", {"name": "Invoice", "schema": stricter})
    assert not updated["created"] and updated["description"] == "A supplier invoice"
    assert updated["nonconforming"] == sorted([good["id"], bad["id"]])
    with pytest.raises(ToolError, match="no valid JSON Schema"):
        call("create_or_update_object_type", {"name": "Broken", "schema": {"type": "nonsense"}})
    with pytest.raises(ToolError, match=r"no object type `Order` \(types: Invoice\)"):
        call("get_object_type", {"name": "Order"})
    with pytest.raises(ToolError, match="invalid object type name"):
        call("get_object_type", {"name": "../etc"})


def test_collections_group_documents(run_ctx, home):
    a = documents.create("a.txt", "A", properties={"year": 2024})
    b = documents.create("b.txt", "B", properties={"year": 2025})
    created = call("create_collection", {"name": "Contracts 2024", "description": "Signed in 2024"})
    cid = created["id"]
    assert cid == "contracts-2024" and created["document_count"] == 0
    assert call("create_collection", {"name": "Contracts 2024"})["id"] == "contracts-2024-2"
    added = call("add_to_collection", {"collection_id": cid, "document_ids": [a["id"], b["id"]]})
    assert added["added"] == [a["id"], b["id"]] and added["document_count"] == 2
    assert call("add_to_collection", {"collection_id": cid, "document_ids": [a["id"]]})["already_members"] == [a["id"]]
    removed = call("remove_from_collection", {"collection_id": cid, "document_ids": [b["id"], "other"]})
    assert removed["removed"] == [b["id"]] and removed["not_members"] == ["other"] and removed["document_count"] == 1
    assert documents.metadata(b["id"])["name"] == "b.txt"  # the document itself stays
    got = call("get_collection", {"collection_id": cid})
    assert got["name"] == "Contracts 2024" and [d["id"] for d in got["documents"]] == [a["id"]] and got["missing"] == []
    documents.delete(a["id"])
    assert call("get_collection", {"collection_id": cid})["missing"] == [a["id"]]
    renamed = call("update_collection", {"collection_id": cid, "name": "Signed contracts"})
    assert renamed["name"] == "Signed contracts" and renamed["description"] == "Signed in 2024"
    assert [c["id"] for c in call("search_collections", {"name": "SIGNED"})] == [cid]
    assert [c["id"] for c in call("search_collections", {})] == ["contracts-2024-2", cid]
    with pytest.raises(ToolError, match="no document `ghost`"):
        call("add_to_collection", {"collection_id": cid, "document_ids": ["ghost"]})
    with pytest.raises(ToolError, match="no collection `nope`"):
        call("get_collection", {"collection_id": "nope"})


def test_a_collection_schema_refuses_documents_that_do_not_fit(run_ctx, home):
    fits = documents.create("fits.txt", "x", properties={"total": 3})
    other = documents.create("other.txt", "y", properties={"total": "three"})
    cid = call("create_collection", {"name": "Invoices", "schema": INVOICE})["id"]
    with pytest.raises(ToolError, match=r"`other` does not fit the schema.*nothing was added"):
        call("add_to_collection", {"collection_id": cid, "document_ids": [fits["id"], other["id"]]})
    assert call("get_collection", {"collection_id": cid})["documents"] == []


def test_create_content_object_imports_a_url_into_a_typed_document_in_a_collection(run_ctx, home, local_server, monkeypatch):
    def handle(request):
        if request.path == "/terms.md":
            request.send(200, "# Terms\n\nPayment in 30 days.".encode(), {"Content-Type": "text/markdown; charset=utf-8"})
        else:
            request.send(200, b"%PDF-1.4", {"Content-Type": "application/pdf"})

    port = local_server(handle)
    monkeypatch.setenv("ERGON_HTTP_ALLOW_HOSTS", f"127.0.0.1:{port}")
    call("create_or_update_object_type", {"name": "Policy", "schema": {"type": "object", "required": ["owner"]}})
    cid = call("create_collection", {"name": "Policies"})["id"]
    url = f"http://127.0.0.1:{port}/terms.md"
    meta = call("create_content_object", {"location": url, "type": "Policy", "properties": {"owner": "legal"},
                                          "tags": ["terms", "2025"], "collection_id": cid})
    stored = documents.get(meta["id"])
    assert stored["content"] == "# Terms\n\nPayment in 30 days." and stored["name"] == "terms.md"
    assert stored["type"] == "Policy" and stored["source"] == url and stored["content_type"] == "text/markdown"
    assert stored["properties"] == {"owner": "legal", "tags": ["terms", "2025"]}
    assert [d["id"] for d in call("get_collection", {"collection_id": cid})["documents"]] == [meta["id"]]
    with pytest.raises(ToolError, match="application/pdf; the document store holds text documents only"):
        call("create_content_object", {"location": f"http://127.0.0.1:{port}/file.pdf"})
    with pytest.raises(ToolError, match="do not fit object type `Policy`"):
        call("create_content_object", {"location": url, "type": "Policy"})
    with pytest.raises(ToolError, match="`s3` locations are not reachable"):
        call("create_content_object", {"location": "s3://bucket/terms.md"})


def test_create_content_object_refuses_private_addresses(run_ctx, home, monkeypatch):
    monkeypatch.delenv("ERGON_HTTP_ALLOW_HOSTS", raising=False)
    with pytest.raises(ToolError, match="refused|not public|private|loopback"):
        call("create_content_object", {"location": "http://127.0.0.1:9/x.txt"})
    assert documents.list_documents() == []


def test_create_content_object_from_an_artifact(run_ctx, home):
    call("write_artifact", {"key": "out/summary.md", "content": "The summary."})
    meta = call("create_content_object", {"location": "artifact:out/summary.md", "tags": ["summary"]})
    assert meta["name"] == "summary.md" and documents.get(meta["id"])["content"] == "The summary."


def test_get_index_configuration_reports_the_vector_index(run_ctx, home, monkeypatch):
    monkeypatch.delenv("ERGON_EMBEDDING_MODEL", raising=False)
    documents.create("a.txt", "Payment terms are thirty days.")
    b = documents.create("b.txt", "Delivery within a week.")
    empty = call("get_index_configuration")
    assert empty["enabled"] and not empty["exists"] and empty["document_count"] == 2 and empty["indexed_count"] == 0
    assert empty["embedding_dimensions"] == {"text": None}
    indexed = call("generateEmbeddings", {"document": ["a", b["id"]]})
    config = call("get_index_configuration")
    assert config["exists"] and config["model"] == indexed["model"]
    assert config["indexed_count"] == config["current_count"] == 2 and config["size_bytes"] > 0
    assert config["embedding_dimensions"] == {"text": indexed["dimensions"]}
    # changing a document's text leaves its vector stale until it is indexed again
    call("update_document", {"id": b["id"], "content": "Delivery within two weeks."})
    assert call("get_index_configuration")["current_count"] == 1
    other = call("get_index_configuration", {"model": "openai/text-embedding-3-small"})
    assert not other["exists"] and other["other_indexes"] == [config["index_name"].split("/", 1)[1]]


def test_search_documents_within_a_collection(run_ctx, home):
    a = documents.create("a.txt", "Payment terms: thirty days.")
    b = documents.create("b.txt", "Payment by card only.")
    documents.create("c.txt", "Payment in advance.")
    cid = call("create_collection", {"name": "Card"})["id"]
    call("add_to_collection", {"collection_id": cid, "document_ids": [b["id"], a["id"]]})
    assert len(call("search_documents", {"query": "payment"})) == 3
    hits = call("search_documents", {"query": "payment", "collection_id": cid})
    assert sorted(h["id"] for h in hits) == sorted([a["id"], b["id"]])
    assert len(call("search_documents", {"query": "payment", "collection_id": cid, "limit": 1})) == 1
    with pytest.raises(ToolError, match="tool `search_documents`: no collection `nope`"):
        call("search_documents", {"query": "payment", "collection_id": "nope"})
