"""A small local document store: text documents under ``<ERGON_HOME>/documents``.

Each document is two files: ``<id>.txt`` (its text, UTF-8) and ``<id>.json`` (metadata: id,
name, size, content type, created_at, sha256, source). Plain files rather than store tables:
documents are inputs that people add with ``ergon documents add``, look at and back up like any
folder, and they are shared by all runs.

Search is deliberately simple and deterministic — term counts weighted by rarity across the
store (a TF-IDF sum), ties broken by id — so that agents and tests get the same answer every time.
It stands in for a real search service; the tool signatures would not change.

A document is written whole or not at all (:func:`flows.files.write_together`): on a full disk
``add`` and ``create`` leave no trace of the new document (the id they reserved is released),
and ``update`` leaves the old text and metadata as they were; the error is a one-sentence
:class:`~flows.files.DiskFull` naming the file.
"""

from __future__ import annotations

import json
import math
import mimetypes
import re
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from hashlib import sha256
from pathlib import Path
from typing import Any

from flows.errors import ErgonError
from flows.files import DiskFull, is_no_space, write_together
from flows.settings import documents_dir

#: Largest text a document may hold (the store is for working documents, not data sets).
MAX_DOCUMENT_BYTES = 10 * 1024 * 1024
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_WORD = re.compile(r"[^\W_]+", re.UNICODE)


class DocumentError(ErgonError):
    """A document request the store refuses (bad id, binary file, too large, id taken)."""


class DocumentNotFound(DocumentError, LookupError):
    pass


@dataclass(frozen=True)
class Hit:
    id: str
    name: str
    score: float
    snippet: str

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "score": self.score, "snippet": self.snippet}


def _root() -> Path:
    return documents_dir()


def slug(text: str) -> str:
    """An id made from a name: lower case, runs of other characters turned into `-`."""
    s = re.sub(r"[^a-z0-9._-]+", "-", text.lower()).strip("-._")
    return (s or "document")[:100]


def _check_id(doc_id: str) -> str:
    if not _ID.match(doc_id) or ".." in doc_id:
        raise DocumentError(f"invalid document id `{doc_id}`: use letters, digits, `.`, `_` and `-` (at most 128)")
    return doc_id


def _reserve(path: Path) -> None:
    """Create the empty metadata file that reserves an id (O_EXCL: two writers never get the
    same id); :class:`FileExistsError` when it is taken."""
    try:
        with open(path, "x", encoding="utf-8"):
            pass
    except OSError as exc:
        if is_no_space(exc):
            raise DiskFull(path) from exc
        raise


def _claim(root: Path, doc_id: str | None, name: str, replace: bool) -> tuple[str, bool]:
    """Reserve an id: the given one (taken → error unless ``replace``) or the name's slug, -2, -3…;
    returns it and whether an empty metadata file was made to reserve it."""
    if doc_id is not None:
        _check_id(doc_id)
        if replace:
            return doc_id, False
        try:
            _reserve(root / f"{doc_id}.json")
            return doc_id, True
        except FileExistsError:
            raise DocumentError(f"document `{doc_id}` already exists (choose another id)") from None
    base = slug(Path(name).stem or name)
    for n in range(1, 10_000):
        candidate = base if n == 1 else f"{base}-{n}"
        try:
            _reserve(root / f"{candidate}.json")
            return candidate, True
        except FileExistsError:
            continue
    raise DocumentError(f"too many documents named like `{name}`")


@contextmanager
def _released_on_failure(root: Path, doc_id: str, reserved: bool) -> Iterator[None]:
    """Give back a reserved id when writing its document fails: a full disk must leave no empty
    or half document behind."""
    try:
        yield
    except BaseException:
        meta = root / f"{doc_id}.json"
        if reserved and meta.exists() and meta.stat().st_size == 0:
            meta.unlink(missing_ok=True)
        raise


def _check_size(name: str, data: bytes) -> None:
    if len(data) > MAX_DOCUMENT_BYTES:
        raise DocumentError(f"`{name}` is {len(data)} bytes; documents are limited to {MAX_DOCUMENT_BYTES}")


def _save(doc_id: str, name: str, text: str, content_type: str, source: str | None,
          extra: dict[str, Any] | None = None, *, created_at: str | None = None) -> dict[str, Any]:
    """Write a document's text and metadata together; ``created_at`` (an update's) keeps the
    creation time and records the update's."""
    data = text.encode("utf-8")
    root = _root()
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    meta = {
        "id": doc_id, "name": name, "size": len(data), "content_type": content_type,
        "created_at": created_at or now, "sha256": sha256(data).hexdigest(), "source": source, **(extra or {}),
    }
    if created_at is not None:
        meta["updated_at"] = now
    write_together({root / f"{doc_id}.txt": text,
                    root / f"{doc_id}.json": json.dumps(meta, indent=2, ensure_ascii=False)})
    return meta


def add(path: str | Path, id: str | None = None, *, replace: bool = False) -> dict[str, Any]:
    """Copy the text file at ``path`` into the store; returns its metadata."""
    path = Path(path)
    if not path.is_file():
        raise DocumentError(f"{path}: no such file")
    if path.stat().st_size > MAX_DOCUMENT_BYTES:
        raise DocumentError(f"{path}: larger than {MAX_DOCUMENT_BYTES} bytes")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise DocumentError(f"{path}: not UTF-8 text (only text documents are supported)") from None
    _check_size(path.name, text.encode("utf-8"))
    content_type = mimetypes.guess_type(path.name)[0] or "text/plain"
    root = _root()
    doc_id, reserved = _claim(root, id, path.name, replace)
    with _released_on_failure(root, doc_id, reserved):
        return _save(doc_id, path.name, text, content_type, str(path.resolve()))


def create(name: str, content: str, *, id: str | None = None, source: str | None = None,
           content_type: str | None = None, type: str | None = None,
           properties: dict[str, Any] | None = None) -> dict[str, Any]:
    """Store ``content`` as a new document named ``name``; returns its metadata.

    ``type`` and ``properties`` (the workflow DSL's document type and properties) are kept in
    the metadata when given.
    """
    _check_size(name, content.encode("utf-8"))
    root = _root()
    doc_id, reserved = _claim(root, id, name, False)
    ctype = content_type or mimetypes.guess_type(name)[0] or "text/markdown"
    extra: dict[str, Any] = {}
    if type is not None:
        extra["type"] = type
    if properties is not None:
        extra["properties"] = dict(properties)
    with _released_on_failure(root, doc_id, reserved):
        return _save(doc_id, name, content, ctype, source, extra)


def update(doc_id: str, *, properties: dict[str, Any] | None = None, content: str | None = None) -> dict[str, Any]:
    """Merge ``properties`` into a document's properties and/or replace its text; returns the metadata."""
    meta = metadata(doc_id)
    text = content if content is not None else (_root() / f"{doc_id}.txt").read_text(encoding="utf-8")
    _check_size(meta["name"], text.encode("utf-8"))
    extra = {k: v for k, v in meta.items() if k in ("type", "properties")}
    if properties:
        extra["properties"] = {**(meta.get("properties") or {}), **properties}
    return _save(doc_id, meta["name"], text, meta["content_type"], meta.get("source"), extra,
                 created_at=meta["created_at"])


def delete(doc_id: str) -> None:
    """Remove a document (its text and metadata); unknown ids raise :class:`DocumentNotFound`."""
    metadata(doc_id)
    for suffix in (".json", ".txt"):
        (_root() / f"{doc_id}{suffix}").unlink(missing_ok=True)


def metadata(doc_id: str) -> dict[str, Any]:
    _check_id(doc_id)
    path = _root() / f"{doc_id}.json"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DocumentNotFound(f"no document `{doc_id}`") from None
    if not text:  # an id claimed by a writer that has not finished
        raise DocumentNotFound(f"no document `{doc_id}`")
    return json.loads(text)


def get(doc_id: str) -> dict[str, Any]:
    """A document's metadata and its text (``content``)."""
    meta = metadata(doc_id)
    text = (_root() / f"{doc_id}.txt").read_text(encoding="utf-8")
    return {**meta, "content": text}


def list_documents() -> list[dict[str, Any]]:
    """Metadata of every document, by id."""
    out = []
    for path in sorted(_root().glob("*.json")):
        try:
            out.append(metadata(path.stem))
        except (DocumentError, ValueError):
            continue  # half-written or foreign file
    return sorted(out, key=lambda m: m["id"])


def _terms(text: str) -> list[str]:
    return [w.casefold() for w in _WORD.findall(text)]


def _snippet(text: str, terms: set[str], width: int = 200) -> str:
    lowered = text.casefold()
    positions = [p for p in (lowered.find(t) for t in terms) if p >= 0]
    start = max(0, min(positions) - width // 4) if positions else 0
    piece = " ".join(text[start:start + width].split())
    return ("…" if start > 0 else "") + piece + ("…" if start + width < len(text) else "")


def search(query: str, limit: int = 5) -> list[Hit]:
    """Documents matching ``query``, best first: Σ over query terms of tf · idf (name matches count 3×)."""
    wanted = set(_terms(query))
    if not wanted:
        return []
    docs = []
    for meta in list_documents():
        text = (_root() / f"{meta['id']}.txt").read_text(encoding="utf-8")
        counts = Counter(_terms(text))
        for term in _terms(meta["name"]):
            counts[term] += 3
        docs.append((meta, text, counts))
    df = {t: sum(1 for _, _, c in docs if c[t]) for t in wanted}
    hits = []
    for meta, text, counts in docs:
        score = sum((1 + math.log(counts[t])) * math.log(1 + len(docs) / df[t]) for t in wanted if counts[t])
        if score > 0:
            hits.append(Hit(meta["id"], meta["name"], round(score, 4), _snippet(text, wanted)))
    hits.sort(key=lambda h: (-h.score, h.id))
    return hits[: max(0, limit)]
