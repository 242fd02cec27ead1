"""Activities of the workflow DSL (seed 002) as built-in tools, named as the DSL page names them.

Document activities work over the local document store (:mod:`flows.documents`):
``createDocument(type, properties)`` creates a document (its text is ``content``, or empty; its
name is ``properties.name``, else the type), ``updateDocument(document, properties)`` merges
properties (and may replace the text), ``deleteDocument(document)`` removes it. ``document`` is a
document id, or a document mapping with an ``id`` (what ``createDocument`` or a ``fetch`` gives).
The compiler knows their parameters statically (``compiler.tools.BUILTIN_TOOL_PARAMS``; a test
keeps the two in step).
"""

from __future__ import annotations

from typing import Any

from flows import documents
from flows.tools import tool
from flows.tools.errors import ToolError


def _doc_id(activity: str, document: str | dict[str, Any]) -> str:
    if isinstance(document, dict):
        doc_id = document.get("id")
        if not isinstance(doc_id, str):
            raise ToolError(activity, "`document` is a document id or a mapping with an `id`")
        return doc_id
    return document


@tool(name="createDocument")
def create_document_activity(type: str, properties: dict[str, Any] | None = None, content: str = "") -> dict:
    """Create a document in the document store; returns `{document: <its metadata>}`.

    Args:
        type: the document's type (kept in its metadata)
        properties: the document's properties (`name` also names it)
        content: the document's text (default empty)
    """
    props = dict(properties or {})
    name = str(props.get("name") or type)
    try:
        return {"document": documents.create(name, content, type=type, properties=props)}
    except documents.DocumentError as exc:
        raise ToolError("createDocument", str(exc)) from None


@tool(name="updateDocument")
def update_document_activity(document: str | dict[str, Any], properties: dict[str, Any] | None = None,
                             content: str | None = None) -> dict:
    """Update a document: merge `properties` into its properties, replace its text when `content` is given.

    Args:
        document: the document's id, or a document (a mapping with `id`)
        properties: properties to set
        content: the new text (omit to keep it)
    """
    try:
        return {"document": documents.update(_doc_id("updateDocument", document), properties=properties, content=content)}
    except documents.DocumentError as exc:
        raise ToolError("updateDocument", str(exc)) from None


@tool(name="deleteDocument")
def delete_document_activity(document: str | dict[str, Any]) -> dict:
    """Delete a document from the document store; returns `{deleted: <id>}`.

    Args:
        document: the document's id, or a document (a mapping with `id`)
    """
    doc_id = _doc_id("deleteDocument", document)
    try:
        documents.delete(doc_id)
    except documents.DocumentError as exc:
        raise ToolError("deleteDocument", str(exc)) from None
    return {"deleted": doc_id}
