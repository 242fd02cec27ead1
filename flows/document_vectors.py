"""The vector index of the local document store: one vector per document and embedding model.

Where the vectors are kept: beside the documents, as files, under
``<ERGON_HOME>/documents/.vectors/<model>/<document id>.json`` (``<model>`` is the embedding
model's name made safe for a folder, with a digest of the full name). Each file holds the
document's id, the SHA-256 of the text it was computed from, the embedding model's name, the
model that answered, the dimensions and the vector (little-endian float64, base64). Files and not
a store table, for the reasons the documents are files (:mod:`flows.documents`): they belong to
the documents, which every run shares; they are backed up, copied and deleted with that folder;
and indexing needs no migration. Each file is written whole and renamed into place, so two runs
indexing at once never leave a torn vector (the later one wins, and both computed the same
document text).

A vector is **current** while its SHA-256 equals the document's (``sha256`` in its metadata,
which changes exactly when the text does): changing a document's text invalidates its vectors
under every model, changing only its properties does not. :func:`ensure_indexed` brings the
vectors of a set of documents up to date under one model — embedding, in batches, the documents
with no current vector (all of them when ``force``), skipping empty ones, and removing the vectors
of deleted documents. :func:`search` scores the current vectors only.

Search is cosine similarity, best first, ties broken by document id; scores are rounded to six
decimals first, so the order does not hang on the last bits of a float. ``filter`` keeps
documents whose metadata fields equal the given values, as a workflow ``fetch`` query does
(a dotted name reaches into a mapping: ``properties.status``).

Limits: pure Python, no vector database. A search reads every vector file of the model and
scores it (O(documents × dimensions)): on a shared two-core machine, 1,000 documents took about
0.12 s at 512 dimensions (the offline embedder's) and 0.23 s at 1,536, and checking that 1,000
vectors are current about 0.1 s. That suits the store's purpose — working documents, up to a few
thousand — and not a corpus: past that, a real vector store behind the same functions.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import math
import struct
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flows import documents
from flows.files import write_atomic
from flows.settings import documents_dir

__all__ = ["DimensionMismatch", "IndexReport", "VectorEntry", "current_vector", "ensure_indexed", "matches", "search"]

FOLDER = ".vectors"
SNIPPET_CHARS = 200
SCORE_DECIMALS = 6


@dataclass(frozen=True)
class VectorEntry:
    """One stored vector."""

    id: str
    sha256: str
    model: str
    answered_by: str
    vector: list[float]


@dataclass(frozen=True)
class IndexReport:
    """What :func:`ensure_indexed` did: per document id, ``embedded``, ``current`` or ``empty``."""

    model: str
    dimensions: int | None
    status: dict[str, str]

    def as_list(self) -> list[dict[str, str]]:
        return [{"id": doc_id, "status": s} for doc_id, s in self.status.items()]


# --------------------------------------------------------------------------------------------
# files


def _model_dir(model: str) -> Path:
    safe = documents.slug(model)[:60]
    return documents_dir() / FOLDER / f"{safe}-{hashlib.sha256(model.encode('utf-8')).hexdigest()[:10]}"


def _pack(vector: Sequence[float]) -> str:
    return base64.b64encode(struct.pack(f"<{len(vector)}d", *vector)).decode("ascii")


def _unpack(data: str) -> list[float]:
    raw = base64.b64decode(data)
    return list(struct.unpack(f"<{len(raw) // 8}d", raw))


def _read(path: Path) -> VectorEntry | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return VectorEntry(data["id"], data["sha256"], data["model"], data.get("answered_by") or data["model"],
                           _unpack(data["vector"]))
    except (OSError, ValueError, KeyError, TypeError, struct.error):
        return None  # missing, half-copied or foreign: the document is simply embedded again


def _write(model: str, answered_by: str, doc_id: str, sha: str, vector: Sequence[float]) -> None:
    folder = _model_dir(model)
    folder.mkdir(parents=True, exist_ok=True)
    payload = {"id": doc_id, "sha256": sha, "model": model, "answered_by": answered_by,
               "dimensions": len(vector), "vector": _pack(vector)}
    # whole or not at all, and no temporary file left when the disk is full (flows.files)
    write_atomic(folder / f"{doc_id}.json", json.dumps(payload))


def current_vector(doc_id: str, model: str) -> VectorEntry | None:
    """The document's vector under ``model`` if it was computed from its present text."""
    entry = _read(_model_dir(model) / f"{doc_id}.json")
    return entry if entry is not None and entry.sha256 == documents.metadata(doc_id)["sha256"] else None


def _prune(model: str, known: set[str]) -> None:
    folder = _model_dir(model)
    if folder.is_dir():
        for path in folder.glob("*.json"):
            if path.stem not in known:
                path.unlink(missing_ok=True)


# --------------------------------------------------------------------------------------------
# filters


def _field(meta: Mapping[str, Any], name: str) -> tuple[bool, Any]:
    value: Any = meta
    for part in name.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return False, None
        value = value[part]
    return True, value


def matches(meta: Mapping[str, Any], filter: Mapping[str, Any] | None) -> bool:
    """Whether a document's metadata has every field of ``filter`` with the given value."""
    for name, wanted in (filter or {}).items():
        found, value = _field(meta, name)
        if not found or value != wanted:
            return False
    return True


def _selected(ids: Iterable[str] | None, filter: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    if ids is None:
        return [m for m in documents.list_documents() if matches(m, filter)]
    return [m for m in (documents.metadata(i) for i in dict.fromkeys(ids)) if matches(m, filter)]


# --------------------------------------------------------------------------------------------
# indexing


def _plan(ids: Iterable[str] | None, filter: Mapping[str, Any] | None, model: str, force: bool):
    """The selected documents, the status of those needing no call, and the (id, sha256, text) to embed."""
    metas = _selected(ids, filter)
    status: dict[str, str] = {}
    todo: list[tuple[str, str, str]] = []
    dimensions: int | None = None
    for meta in metas:
        entry = None if force else _read(_model_dir(model) / f"{meta['id']}.json")
        if entry is not None and entry.sha256 == meta["sha256"]:
            status[meta["id"]], dimensions = "current", len(entry.vector)
            continue
        text = documents.get(meta["id"])["content"]
        if text.strip():
            todo.append((meta["id"], meta["sha256"], text))
        else:
            status[meta["id"]] = "empty"  # nothing to embed; never a search result
    if ids is None and not filter:
        _prune(model, {m["id"] for m in metas})
    return metas, status, todo, dimensions


async def ensure_indexed(ids: Iterable[str] | None = None, *, model: str | None = None, force: bool = False,
                         filter: Mapping[str, Any] | None = None, environments: Any = None,
                         run_id: str | None = None, visit_id: str | None = None) -> IndexReport:
    """Current vectors under ``model`` for the documents ``ids`` (default: every document) matching ``filter``.

    Unknown ids raise :class:`flows.documents.DocumentNotFound`; a failed embedding call raises
    :class:`flows.llm.types.LlmError`.
    """
    from flows.llm.embeddings import embed, embedding_model

    name = embedding_model(model)
    metas, status, todo, dimensions = await asyncio.to_thread(_plan, ids, filter, name, force)
    if todo:
        got = await embed([t for _, _, t in todo], model=name, environments=environments, run_id=run_id, visit_id=visit_id)

        def write_all() -> None:
            for (doc_id, sha, _), vector in zip(todo, got.vectors, strict=True):
                _write(name, got.answered_by, doc_id, sha, vector)
                status[doc_id] = "embedded"

        await asyncio.to_thread(write_all)
        dimensions = got.dimensions
    return IndexReport(model=name, dimensions=dimensions, status={m["id"]: status[m["id"]] for m in metas})


# --------------------------------------------------------------------------------------------
# search


def _cosine(query: Sequence[float], query_norm: float, vector: Sequence[float]) -> float | None:
    norm = math.sqrt(sum(v * v for v in vector))
    if norm == 0:
        return None
    return sum(a * b for a, b in zip(query, vector, strict=True)) / (query_norm * norm)


def _snippet(text: str) -> str:
    piece = " ".join(text[:SNIPPET_CHARS].split())
    return piece + ("…" if len(text) > SNIPPET_CHARS else "")


class DimensionMismatch(documents.DocumentError):
    """The query vector and the index's vectors have different dimensions (different models)."""


def search(query: Sequence[float], *, model: str | None = None, limit: int = 5,
           filter: Mapping[str, Any] | None = None) -> list[documents.Hit]:
    """The ``limit`` documents (matching ``filter``) whose current vectors are nearest ``query``, best first."""
    from flows.llm.embeddings import embedding_model

    name = embedding_model(model)
    query = [float(x) for x in query]
    query_norm = math.sqrt(sum(v * v for v in query))
    if query_norm == 0:
        raise documents.DocumentError("the query embeddings are all zero: they are near nothing")
    scored: list[tuple[float, dict[str, Any]]] = []
    for meta in _selected(None, filter):
        entry = _read(_model_dir(name) / f"{meta['id']}.json")
        if entry is None or entry.sha256 != meta["sha256"]:
            continue
        if len(entry.vector) != len(query):
            raise DimensionMismatch(
                f"the query embeddings have {len(query)} dimensions, the documents indexed with `{name}` have "
                f"{len(entry.vector)}: embed the query with the same model")
        score = _cosine(query, query_norm, entry.vector)
        if score is not None:
            scored.append((round(score, SCORE_DECIMALS), meta))
    scored.sort(key=lambda pair: (-pair[0], pair[1]["id"]))
    hits = []
    for score, meta in scored[: max(0, limit)]:
        text = documents.get(meta["id"])["content"]
        hits.append(documents.Hit(meta["id"], meta["name"], score, _snippet(text)))
    return hits
