"""Embedding tools: the workflow DSL's ``generateEmbeddings`` and ``searchEmbeddings``, and the
agents' ``semantic_search_documents``.

The embedding model is the activity's ``model`` parameter, else ``ERGON_EMBEDDING_MODEL``, else
the offline embedder (:mod:`flows.llm.embeddings`); document vectors live in the document
store's vector index (:mod:`flows.document_vectors`), one per document and embedding model.

* ``generateEmbeddings(text)`` embeds a text (or a list of texts) and returns
  ``{embeddings, model, dimensions}``: one vector for a text, a list of vectors for a list.
  Vectors are rounded to 7 decimals (a cosine moves by less than 10⁻⁶), which keeps a
  3,072-dimension vector near 35 KB of a run's 64 KB context.
* ``generateEmbeddings(document)`` indexes a document (or a list: ids, or documents with an
  ``id`` as ``createDocument`` and ``fetch`` give them) and returns ``{indexed: [{id, status}],
  model, dimensions}`` — ``embedded``, ``current`` (its text has not changed since: no call) or
  ``empty`` (no text to embed). ``force: true`` embeds them again. The vectors stay in the index,
  not in the run's context. The seed's ``type`` is ``text``, the only embedding type Ergon has.
* ``searchEmbeddings(embeddings)`` brings the index up to date for the documents matching
  ``filter`` (documents added or changed since are embedded first, as a search service indexes on
  upload), then returns ``{results: [{id, name, score, snippet}], model}``: the ``limit`` nearest
  by cosine similarity, best first, ties by id — the shape ``search_documents`` returns.
  ``embeddings`` must come from the same embedding model (``model``) as the index.
* ``semantic_search_documents(query)`` does both for agents: embed the query, search.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any, Literal

from pydantic import Field

from flows import document_vectors, documents
from flows.tools import tool
from flows.tools.context import current
from flows.tools.errors import ToolError

#: Decimals of the vectors an activity returns (see the module docstring).
VECTOR_DECIMALS = 7
MAX_RESULTS = 50

DocumentRef = str | dict[str, Any]


@contextmanager
def _refusals(activity: str) -> Iterator[None]:
    """A failed embedding call or a document the store refuses, as the activity's tool error."""
    from flows.llm.types import LlmError

    try:
        yield
    except (LlmError, documents.DocumentError) as exc:
        raise ToolError(activity, str(exc)) from None


def _doc_id(activity: str, document: DocumentRef) -> str:
    if isinstance(document, dict):
        doc_id = document.get("id")
        if not isinstance(doc_id, str):
            raise ToolError(activity, "each `document` is a document id or a mapping with an `id`")
        return doc_id
    return document


def _rounded(vector: list[float]) -> list[float]:
    return [round(x, VECTOR_DECIMALS) for x in vector]


@tool(name="generateEmbeddings")
async def generate_embeddings(text: str | list[str] | None = None, document: DocumentRef | list[DocumentRef] | None = None,
                              type: Literal["text"] = "text", force: bool = False, model: str | None = None) -> dict:
    """Embed a text, or index documents of the document store for `searchEmbeddings`.

    Args:
        text: a text (or a list of texts) to embed; returns `embeddings`
        document: a document id or document (or a list of them) to index; returns `indexed`
        type: the embedding type; `text` (the only one)
        force: embed the documents again even when their text has not changed
        model: the embedding model or environment (default `ERGON_EMBEDDING_MODEL`, else offline)
    """
    activity = "generateEmbeddings"
    if (text is None) == (document is None):
        raise ToolError(activity, "give exactly one of `text` (to embed it) and `document` (to index it)")
    ctx = current()
    if text is not None:
        if force:
            raise ToolError(activity, "`force` re-embeds documents; a `text` is embedded on every call")
        texts = [text] if isinstance(text, str) else list(text)
        if not texts:
            raise ToolError(activity, "`text` is an empty list")
        from flows.llm.embeddings import embed

        with _refusals(activity):
            got = await embed(texts, model=model, environments=ctx.environments, run_id=ctx.run_id, visit_id=ctx.visit_id)
        vectors = [_rounded(v) for v in got.vectors]
        return {"embeddings": vectors[0] if isinstance(text, str) else vectors, "model": got.model,
                "dimensions": got.dimensions}
    refs = document if isinstance(document, list) else [] if document is None else [document]
    if not refs:
        raise ToolError(activity, "`document` is an empty list")
    ids = [_doc_id(activity, ref) for ref in refs]
    with _refusals(activity):
        report = await document_vectors.ensure_indexed(ids, model=model, force=force, environments=ctx.environments,
                                                       run_id=ctx.run_id, visit_id=ctx.visit_id)
    return {"indexed": report.as_list(), "model": report.model, "dimensions": report.dimensions}


async def _search(activity: str, vector: list[float], limit: int, filter: dict[str, Any] | None,
                  model: str | None) -> tuple[str, list[dict[str, Any]]]:
    ctx = current()
    with _refusals(activity):
        report = await document_vectors.ensure_indexed(model=model, filter=filter, environments=ctx.environments,
                                                       run_id=ctx.run_id, visit_id=ctx.visit_id)
        hits = await asyncio.to_thread(document_vectors.search, vector, model=report.model, limit=limit, filter=filter)
    return report.model, [h.as_dict() for h in hits]


@tool(name="searchEmbeddings")
async def search_embeddings(embeddings: list[float], limit: Annotated[int, Field(ge=1, le=MAX_RESULTS)] = 5,
                            filter: dict[str, Any] | None = None, model: str | None = None) -> dict:
    """The documents nearest to an embedding, best first (the index is brought up to date first).

    Args:
        embeddings: the vector to search for (from `generateEmbeddings` with the same model)
        limit: at most this many results (1-50)
        filter: document metadata fields and the values they must equal, e.g. `{type: Contract}`
        model: the embedding model or environment (default `ERGON_EMBEDDING_MODEL`, else offline)
    """
    name, results = await _search("searchEmbeddings", embeddings, limit, filter, model)
    return {"results": results, "model": name}


@tool(name="semantic_search_documents")
async def semantic_search_documents(query: str, limit: int = 5) -> list[dict]:
    """Search the document store by meaning (embeddings); returns the nearest documents with a snippet each.

    Args:
        query: what to look for, in words
        limit: at most this many results (1-50)
    """
    from flows.llm.embeddings import embed

    ctx = current()
    if not query.strip():
        raise ToolError("semantic_search_documents", "`query` is empty")
    with _refusals("semantic_search_documents"):
        got = await embed([query], environments=ctx.environments, run_id=ctx.run_id, visit_id=ctx.visit_id)
    _, results = await _search("semantic_search_documents", got.vectors[0], max(1, min(limit, MAX_RESULTS)), None, None)
    return results
