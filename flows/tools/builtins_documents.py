"""Document tools over the local document store (:mod:`flows.documents`).

``create_document`` follows the seed's pattern: write the text as an artifact first, then
``create_document(name, source="artifact:<key>")`` persists the run's latest version of that
artifact. Passing ``content`` directly works too.
"""

from __future__ import annotations

import json

from flows import documents
from flows.tools import tool
from flows.tools.context import current
from flows.tools.errors import ToolError

#: Longest text fetch_document returns unless asked for more (models have finite contexts).
DEFAULT_MAX_CHARS = 50_000


@tool(name="fetch_document")
def fetch_document(id: str, max_chars: int = DEFAULT_MAX_CHARS) -> dict:
    """Read a document from the document store: its metadata and text.

    Args:
        id: the document's id (from search_documents or the run's inputs)
        max_chars: return at most this many characters of text (`truncated` says if more exist)
    """
    try:
        doc = documents.get(id)
    except documents.DocumentError as exc:
        raise ToolError("fetch_document", str(exc)) from None
    text = doc["content"]
    doc["truncated"] = len(text) > max_chars
    doc["content"] = text[: max(0, max_chars)]
    return doc


@tool(name="search_documents")
def search_documents(query: str, limit: int = 5, collection_id: str | None = None) -> list[dict]:
    """Search the document store by words; returns the best matches with a snippet each.

    Args:
        query: words to look for
        limit: at most this many results (1-50)
        collection_id: only documents of this collection (create_collection, add_to_collection)
    """
    limit = max(1, min(limit, 50))
    if collection_id is None:
        return [hit.as_dict() for hit in documents.search(query, limit)]
    from flows.tools.builtins_catalog_documents import collection_members

    members = collection_members("search_documents", collection_id)
    return [hit.as_dict() for hit in documents.search(query, len(documents.list_documents())) if hit.id in members][:limit]


@tool(name="create_document")
def create_document(name: str, content: str | None = None, source: str | None = None) -> dict:
    """Create a document in the document store from text or from one of the run's artifacts.

    Args:
        name: the document's name, e.g. `summary.md`
        content: the text (omit when `source` is given)
        source: `artifact:<key>` to store the run's latest version of that artifact
    """
    if (content is None) == (source is None):
        raise ToolError("create_document", "give exactly one of `content` and `source`")
    if source is not None:
        content = _artifact_text(source)
    try:
        meta = documents.create(name, content or "", source=source)
    except documents.DocumentError as exc:
        raise ToolError("create_document", str(exc)) from None
    return meta


def _artifact_text(source: str) -> str:
    from flows.store import artifacts as artifact_store

    if not source.startswith("artifact:") or not source[len("artifact:"):].strip():
        raise ToolError("create_document", "`source` must be `artifact:<key>`")
    run_id = current().run_id
    if not run_id:
        raise ToolError("create_document", "`artifact:` sources need a run (none is set in the tool context)")
    key = source[len("artifact:"):].strip()
    rows = artifact_store.artifacts_for_run(run_id, key=key)
    if not rows:
        raise ToolError("create_document", f"no artifact `{key}` in this run")
    content = rows[-1].content
    return content if isinstance(content, str) else json.dumps(content, indent=2, ensure_ascii=False)
