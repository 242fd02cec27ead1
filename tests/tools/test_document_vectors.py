"""The document store's vector index: vectors beside the documents, invalidated by a text change,
cosine search best first with ties by id, filters — on the offline embedder, in a fresh home."""

from __future__ import annotations

import asyncio

import pytest

from flows import document_vectors, documents
from flows.llm.offline_embedding import MODEL, embed_offline


def index(*ids: str, **kw) -> dict[str, str]:
    return asyncio.run(document_vectors.ensure_indexed(list(ids) if ids else None, **kw)).status


def ids(hits) -> list[str]:
    return [h.id for h in hits]


@pytest.fixture(autouse=True)
def _offline(monkeypatch):
    monkeypatch.delenv("ERGON_EMBEDDING_MODEL", raising=False)


def test_vectors_live_beside_the_documents_and_a_text_change_invalidates_them(home):
    documents.create("terms.md", "Payment within 30 days of the invoice.", id="terms")
    documents.create("notes.md", "Lunch is served at noon.", id="notes")
    assert index() == {"notes": "embedded", "terms": "embedded"}
    [folder] = (home / "documents" / ".vectors").iterdir()
    assert sorted(p.name for p in folder.iterdir()) == ["notes.json", "terms.json"]
    assert document_vectors.current_vector("terms", MODEL).vector == embed_offline("Payment within 30 days of the invoice.")
    assert documents.list_documents()[0]["id"] == "notes"  # the index is not a document

    assert index() == {"notes": "current", "terms": "current"}  # nothing changed: no embedding
    documents.update("terms", properties={"status": "signed"})
    assert index("terms") == {"terms": "current"}  # properties are not the text
    documents.update("terms", content="Payment within 60 days of delivery.")
    assert document_vectors.current_vector("terms", MODEL) is None
    # a stale vector is never a search result, even before the index is brought up to date
    query = embed_offline("Payment within 30 days of the invoice.")
    assert ids(document_vectors.search(query, limit=5)) == ["notes"]
    assert index() == {"notes": "current", "terms": "embedded"}
    assert document_vectors.current_vector("terms", MODEL).vector == embed_offline("Payment within 60 days of delivery.")
    assert index("notes", force=True) == {"notes": "embedded"}


def test_search_is_cosine_similarity_best_first_with_ties_broken_by_id(home):
    text = "The supplier ships the goods within 30 days of each order."
    for doc_id, content in [("z-copy", text), ("a-copy", text), ("payment", "Invoices for an order are paid in 60 days."),
                            ("lunch", "The cafeteria serves lunch on Fridays.")]:
        documents.create(f"{doc_id}.md", content, id=doc_id)
    index()
    hits = document_vectors.search(embed_offline("goods shipped within 30 days of the order"), limit=3)
    assert ids(hits) == ["a-copy", "z-copy", "payment"]
    assert hits[0].score == hits[1].score > hits[2].score > 0
    assert hits[0].name == "a-copy.md" and hits[0].snippet == text
    exact = document_vectors.search(embed_offline(text), limit=1)
    assert ids(exact) == ["a-copy"] and exact[0].score == 1.0
    assert ids(document_vectors.search(embed_offline(text), limit=10)) == ["a-copy", "z-copy", "payment", "lunch"]


def test_filters_keep_documents_whose_metadata_fields_equal_the_values(home):
    documents.create("a.md", "A delivery clause about goods.", id="a", type="Clause", properties={"status": "draft"})
    documents.create("b.md", "A delivery clause about goods and more goods.", id="b", type="Clause",
                     properties={"status": "signed"})
    documents.create("c.md", "A delivery note about goods.", id="c", type="Note")
    assert index(filter={"type": "Clause"}) == {"a": "embedded", "b": "embedded"}  # only what may be found
    query = embed_offline("delivery of goods")
    assert ids(document_vectors.search(query, filter={"type": "Clause"})) == ["a", "b"]
    assert ids(document_vectors.search(query, filter={"properties.status": "signed"})) == ["b"]
    assert document_vectors.search(query, filter={"type": "Note"}) == []  # c was not indexed yet
    assert document_vectors.search(query, filter={"properties.missing": None}) == []


def test_empty_documents_are_not_embedded_and_deleted_ones_lose_their_vectors(home):
    documents.create("blank.md", "   ", id="blank")
    documents.create("gone.md", "Soon deleted.", id="gone")
    assert index() == {"blank": "empty", "gone": "embedded"}
    documents.delete("gone")
    documents.create("kept.md", "Kept.", id="kept")
    assert index() == {"blank": "empty", "kept": "embedded"}
    [folder] = (home / "documents" / ".vectors").iterdir()
    assert [p.name for p in folder.iterdir()] == ["kept.json"]


def test_a_torn_or_foreign_vector_file_is_embedded_again(home):
    documents.create("a.md", "Some words.", id="a")
    index()
    [folder] = (home / "documents" / ".vectors").iterdir()
    (folder / "a.json").write_text("{not json")
    assert index() == {"a": "embedded"}
    assert document_vectors.current_vector("a", MODEL) is not None


def test_each_embedding_model_has_its_own_vectors_and_dimensions_must_agree(home):
    documents.create("a.md", "Some words.", id="a")
    index()
    query = embed_offline("some words")
    assert ids(document_vectors.search(query)) == ["a"]
    assert document_vectors.search(query, model="openai/another-model") == []  # nothing indexed under it
    with pytest.raises(document_vectors.DimensionMismatch, match="3 dimensions.*512"):
        document_vectors.search([0.1, 0.2, 0.3])
    with pytest.raises(documents.DocumentError, match="all zero"):
        document_vectors.search([0.0] * 512)


def test_unknown_documents_are_refused(home):
    with pytest.raises(documents.DocumentNotFound):
        index("no-such-document")
