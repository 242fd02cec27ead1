"""The catalog's document tools over the local document store: updating documents, importing
content objects, object types, collections and the vector index's description.

Where things are kept: beside the documents (:mod:`flows.documents`), as files under
``<ERGON_HOME>/documents`` — for the reasons the documents and their vectors are files
(:mod:`flows.document_vectors`): they describe the documents, which every run shares, and are
backed up, copied and deleted with that folder.

* **Object types** — ``.types/<name>.json``: a name, a description and a JSON Schema for the
  properties of the documents of that type (``type`` in a document's metadata). The schema is
  checked against its meta-schema when written; ``update_document`` and
  ``create_content_object`` refuse properties it rejects. (The workflow activities
  ``createDocument`` / ``updateDocument`` do not consult object types.)
* **Collections** — ``.collections/<id>.json`` (name, description, an optional JSON Schema
  the members' properties must satisfy, times) and the folder ``.collections/<id>/`` holding one
  empty file per member document. Adding or removing a member creates or deletes its own file,
  so two runs changing one collection at once never lose each other's changes (a name or
  description update is whole-file, the later one wins). Deleting a document leaves its
  membership file: ``get_collection`` reports such members as ``missing``.

``get_index_configuration`` describes the document store's vector index
(:mod:`flows.document_vectors`) under one embedding model: how many documents have a vector,
how many of those are current, the files' size and the dimensions. There is nothing to
configure (``update_index_configuration`` is refused: re-index with ``generateEmbeddings``).

``create_content_object`` imports a text resource from an ``https://`` (or ``http://``) URL through
``http_request``'s checks (public addresses only, redirects checked, size cap) or from an
``artifact:<key>``; cloud storage URLs (``s3://``, ``gs://``) are refused, since Ergon holds no
cloud credentials, and so is a binary resource, since the document store holds text.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from flows import documents
from flows.files import write_atomic
from flows.settings import documents_dir
from flows.tools import tool
from flows.tools.errors import ToolError

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
#: Media types create_content_object stores (the document store holds text).
_TEXT_TYPES = ("text/", "application/json", "application/xml", "application/yaml", "application/x-yaml",
               "application/csv", "application/markdown")


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _check_name(tool_name: str, value: str, what: str) -> str:
    if not _NAME.match(value) or ".." in value:
        raise ToolError(tool_name, f"invalid {what} `{value}`: use letters, digits, `.`, `_` and `-` (at most 128)")
    return value


def _check_schema(tool_name: str, schema: dict[str, Any]) -> None:
    import jsonschema

    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise ToolError(tool_name, f"`schema` is no valid JSON Schema: {exc.message}") from None


def _violations(schema: dict[str, Any], value: Any) -> list[str]:
    import jsonschema

    validator = jsonschema.validators.validator_for(schema)(schema)
    return [f"{'/'.join(map(str, e.absolute_path)) or '(properties)'}: {e.message}"
            for e in sorted(validator.iter_errors(value), key=lambda e: list(map(str, e.absolute_path)))]


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None


def _document(tool_name: str, doc_id: str) -> dict[str, Any]:
    try:
        return documents.metadata(doc_id)
    except documents.DocumentError as exc:
        raise ToolError(tool_name, str(exc)) from None


# --------------------------------------------------------------------------------------------
# Object types


def _types_dir() -> Path:
    return documents_dir() / ".types"


def object_type(name: str) -> dict[str, Any] | None:
    """The object type ``name``, or None when none is defined."""
    if not _NAME.match(name) or ".." in name:
        return None
    return _read_json(_types_dir() / f"{name}.json")


def _check_type(tool_name: str, type_name: str | None, properties: dict[str, Any] | None) -> None:
    """Refuse properties that the document type's schema rejects (a type not defined checks nothing)."""
    defined = object_type(type_name) if type_name else None
    if defined is None or defined.get("schema") is None:
        return
    problems = _violations(defined["schema"], properties or {})
    if problems:
        raise ToolError(tool_name, f"the properties do not fit object type `{type_name}`: {'; '.join(problems)}")


@tool(name="get_object_type")
def get_object_type(name: str) -> dict:
    """The definition of an object type: its description, the JSON Schema of its documents'
    properties, and how many documents have it.

    Args:
        name: the type's name (a document's `type`)
    """
    _check_name("get_object_type", name, "object type name")
    defined = object_type(name)
    if defined is None:
        names = sorted(p.stem for p in _types_dir().glob("*.json")) if _types_dir().is_dir() else []
        raise ToolError("get_object_type", f"no object type `{name}` (types: {', '.join(names) or 'none'})")
    count = sum(1 for meta in documents.list_documents() if meta.get("type") == name)
    return {**defined, "document_count": count}


@tool(name="create_or_update_object_type")
def create_or_update_object_type(name: str, description: str | None = None, schema: dict[str, Any] | None = None) -> dict:
    """Create an object type, or update one: its description and the JSON Schema its documents'
    properties must satisfy. Existing documents are not changed; the ones the new schema rejects
    are counted in `nonconforming`.

    Args:
        name: the type's name, e.g. `Invoice`
        description: what documents of this type are
        schema: a JSON Schema for the documents' properties, e.g. `{"type": "object", "required": ["total"]}`
    """
    _check_name("create_or_update_object_type", name, "object type name")
    if schema is not None:
        _check_schema("create_or_update_object_type", schema)
    path = _types_dir() / f"{name}.json"
    before = _read_json(path)
    now = _now()
    defined = {"name": name,
               "description": description if description is not None else (before or {}).get("description"),
               "schema": schema if schema is not None else (before or {}).get("schema"),
               "created_at": (before or {}).get("created_at", now), "updated_at": now}
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(defined, indent=2, ensure_ascii=False))
    nonconforming = [meta["id"] for meta in documents.list_documents() if meta.get("type") == name
                     and defined["schema"] is not None and _violations(defined["schema"], meta.get("properties") or {})]
    return {**defined, "created": before is None, "nonconforming": nonconforming}


# --------------------------------------------------------------------------------------------
# Documents


def _artifact_text(tool_name: str, source: str) -> str:
    from flows.store import artifacts as artifact_store
    from flows.tools.builtins_catalog_artifacts import is_binary
    from flows.tools.context import current

    key = source[len("artifact:"):].strip()
    if not key:
        raise ToolError(tool_name, "`artifact:` needs a key, e.g. `artifact:out/report.md`")
    run_id = current().run_id
    if not run_id:
        raise ToolError(tool_name, "`artifact:` sources need a run (none is set in the tool context)")
    rows = artifact_store.artifacts_for_run(run_id, key=key)
    if not rows:
        raise ToolError(tool_name, f"no artifact `{key}` in this run")
    content = rows[-1].content
    if is_binary(content):
        raise ToolError(tool_name, f"artifact `{key}` is a binary file; the document store holds text documents")
    return content if isinstance(content, str) else json.dumps(content, indent=2, ensure_ascii=False)


@tool(name="update_document")
def update_document(id: str, content: str | None = None, source: str | None = None,
                    properties: dict[str, Any] | None = None) -> dict:
    """Update a document of the document store: replace its text and/or merge properties into its
    properties (a property set to null is kept as null). Properties are checked against the
    document's object type, when one is defined.

    Args:
        id: the document's id
        content: the new text (omit to keep the text, or give `source` instead)
        source: `artifact:<key>` to take the new text from the run's latest version of that artifact
        properties: properties to set (merged into the existing ones)
    """
    if content is not None and source is not None:
        raise ToolError("update_document", "give `content` or `source`, not both")
    if content is None and source is None and properties is None:
        raise ToolError("update_document", "give `content`, `source` or `properties`")
    if source is not None:
        if not source.startswith("artifact:"):
            raise ToolError("update_document", "`source` must be `artifact:<key>`")
        content = _artifact_text("update_document", source)
    meta = _document("update_document", id)
    if properties is not None:
        _check_type("update_document", meta.get("type"), {**(meta.get("properties") or {}), **properties})
    try:
        return documents.update(id, properties=properties, content=content)
    except documents.DocumentError as exc:
        raise ToolError("update_document", str(exc)) from None


def _is_text(media_type: str) -> bool:
    base = media_type.split(";")[0].strip().lower()
    return base.startswith(_TEXT_TYPES) or base.endswith(("+json", "+xml"))


@tool(name="create_content_object")
async def create_content_object(location: str, name: str | None = None, type: str | None = None,
                                properties: dict[str, Any] | None = None, tags: list[str] | None = None,
                                collection_id: str | None = None) -> dict:
    """Import a text resource as a new document: from an `https://` URL (public addresses only) or
    a run artifact (`artifact:<key>`), with a type, properties, tags and optionally a collection.

    Args:
        location: an `https://` (or `http://`) URL, or `artifact:<key>` (cloud storage such as `s3://` is not reachable from Ergon)
        name: the document's name (default: the URL's or artifact's last path part)
        type: an object type for the document; its schema checks `properties`
        properties: the document's properties
        tags: labels kept in the document's properties as `tags`
        collection_id: a collection to add the new document to
    """
    from flows.tools.http import http_request

    tool_name = "create_content_object"
    if collection_id is not None:
        _collection(tool_name, collection_id)
    props = {**(properties or {}), **({"tags": list(tags)} if tags is not None else {})}
    _check_type(tool_name, type, props)
    if location.startswith("artifact:"):
        text = _artifact_text(tool_name, location)
        media_type = None
        default_name = location[len("artifact:"):].strip().rsplit("/", 1)[-1]
    elif location.startswith(("https://", "http://")):
        fetched = await http_request(location)
        if not fetched["ok"]:
            raise ToolError(tool_name, f"{location} answered HTTP {fetched['status']}")
        if fetched["truncated"]:
            raise ToolError(tool_name, f"{location} is larger than the HTTP size cap; it was not imported")
        media_type = fetched["content_type"].split(";")[0].strip() or None
        if media_type is not None and not _is_text(media_type):
            raise ToolError(tool_name, f"{location} is {media_type}; the document store holds text documents only")
        text = fetched["body"]
        default_name = fetched["url"].split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1]
    else:
        scheme = location.split(":", 1)[0] if ":" in location else location
        raise ToolError(tool_name, f"`{scheme}` locations are not reachable from Ergon (no cloud storage credentials): "
                                   "give an `https://` URL or an `artifact:<key>`")
    try:
        meta = documents.create(name or default_name or "document", text, source=location, content_type=media_type,
                                type=type, properties=props or None)
    except documents.DocumentError as exc:
        raise ToolError(tool_name, str(exc)) from None
    if collection_id is not None:
        add_to_collection(collection_id, [meta["id"]])
        meta = {**meta, "collection_id": collection_id}
    return meta


# --------------------------------------------------------------------------------------------
# Collections


def _collections_dir() -> Path:
    return documents_dir() / ".collections"


def _collection(tool_name: str, collection_id: str) -> dict[str, Any]:
    _check_name(tool_name, collection_id, "collection id")
    found = _read_json(_collections_dir() / f"{collection_id}.json")
    if found is None:
        raise ToolError(tool_name, f"no collection `{collection_id}` (search_collections lists them)")
    return found


def _members(collection_id: str) -> list[str]:
    folder = _collections_dir() / collection_id
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


def collection_members(tool_name: str, collection_id: str) -> set[str]:
    """The ids of a collection's documents (``search_documents``' ``collection_id`` filter)."""
    _collection(tool_name, collection_id)
    return set(_members(collection_id))


def _summary(collection: dict[str, Any]) -> dict[str, Any]:
    return {**collection, "document_count": len(_members(collection["id"]))}


@tool(name="create_collection")
def create_collection(name: str, description: str | None = None, schema: dict[str, Any] | None = None,
                      id: str | None = None) -> dict:
    """Create a collection: a named group of documents of the document store.

    Args:
        name: the collection's name
        description: what the collection holds
        schema: an optional JSON Schema the properties of its documents must satisfy
        id: the collection's id (default: made from the name)
    """
    if not name.strip():
        raise ToolError("create_collection", "a collection needs a name")
    if schema is not None:
        _check_schema("create_collection", schema)
    root = _collections_dir()
    root.mkdir(parents=True, exist_ok=True)
    now = _now()
    base = _check_name("create_collection", id, "collection id") if id is not None else documents.slug(name)
    for n in range(1, 10_000):
        candidate = base if n == 1 or id is not None else f"{base}-{n}"
        collection = {"id": candidate, "name": name.strip(), "description": description, "schema": schema,
                      "created_at": now, "updated_at": now}
        try:
            write_atomic(root / f"{candidate}.json", json.dumps(collection, indent=2, ensure_ascii=False), replace=False)
        except FileExistsError:
            if id is not None:
                raise ToolError("create_collection", f"collection `{id}` already exists") from None
            continue
        (root / candidate).mkdir(exist_ok=True)
        return _summary(collection)
    raise ToolError("create_collection", f"too many collections named like `{name}`")


@tool(name="update_collection")
def update_collection(collection_id: str, name: str | None = None, description: str | None = None,
                      schema: dict[str, Any] | None = None) -> dict:
    """Change a collection's name, description or schema; its documents are not touched.

    Args:
        collection_id: the collection's id
        name: the new name
        description: the new description
        schema: the new JSON Schema for its documents' properties (documents already in it are not re-checked)
    """
    collection = _collection("update_collection", collection_id)
    if name is None and description is None and schema is None:
        raise ToolError("update_collection", "give `name`, `description` or `schema`")
    if schema is not None:
        _check_schema("update_collection", schema)
    if name is not None and not name.strip():
        raise ToolError("update_collection", "a collection's name cannot be empty")
    collection.update({k: v for k, v in (("name", name and name.strip()), ("description", description), ("schema", schema))
                       if v is not None}, updated_at=_now())
    write_atomic(_collections_dir() / f"{collection_id}.json", json.dumps(collection, indent=2, ensure_ascii=False))
    return _summary(collection)


@tool(name="add_to_collection")
def add_to_collection(collection_id: str, document_ids: list[str]) -> dict:
    """Put existing documents into a collection (the documents themselves are not changed).
    Every id must name a document, and fit the collection's schema when it has one; otherwise
    nothing is added.

    Args:
        collection_id: the collection's id
        document_ids: the documents' ids
    """
    collection = _collection("add_to_collection", collection_id)
    metas = [_document("add_to_collection", doc_id) for doc_id in document_ids]
    if collection.get("schema") is not None:
        for meta in metas:
            problems = _violations(collection["schema"], meta.get("properties") or {})
            if problems:
                raise ToolError("add_to_collection", f"document `{meta['id']}` does not fit the schema of collection "
                                                     f"`{collection_id}`: {'; '.join(problems)}; nothing was added")
    folder = _collections_dir() / collection_id
    folder.mkdir(parents=True, exist_ok=True)
    added, already = [], []
    for meta in metas:
        try:
            (folder / meta["id"]).touch(exist_ok=False)
            added.append(meta["id"])
        except FileExistsError:
            already.append(meta["id"])
    return {"collection_id": collection_id, "added": added, "already_members": already,
            "document_count": len(_members(collection_id))}


@tool(name="remove_from_collection")
def remove_from_collection(collection_id: str, document_ids: list[str]) -> dict:
    """Take documents out of a collection; the documents themselves stay in the store.

    Args:
        collection_id: the collection's id
        document_ids: the documents' ids
    """
    _collection("remove_from_collection", collection_id)
    folder = _collections_dir() / collection_id
    removed, not_members = [], []
    for doc_id in document_ids:
        _check_name("remove_from_collection", doc_id, "document id")
        member = folder / doc_id
        if member.is_file():
            member.unlink(missing_ok=True)
            removed.append(doc_id)
        else:
            not_members.append(doc_id)
    return {"collection_id": collection_id, "removed": removed, "not_members": not_members,
            "document_count": len(_members(collection_id))}


@tool(name="get_collection")
def get_collection(collection_id: str) -> dict:
    """A collection's name, description and schema, and its documents (id, name, type, size);
    members whose document was deleted are listed under `missing`.

    Args:
        collection_id: the collection's id
    """
    collection = _collection("get_collection", collection_id)
    docs, missing = [], []
    for doc_id in _members(collection_id):
        try:
            meta = documents.metadata(doc_id)
        except documents.DocumentError:
            missing.append(doc_id)
            continue
        docs.append({k: meta.get(k) for k in ("id", "name", "type", "size", "content_type", "properties")})
    return {**collection, "document_count": len(docs), "documents": docs, "missing": missing}


@tool(name="search_collections")
def search_collections(name: str = "", limit: int = 20) -> list[dict]:
    """Collections whose name contains `name` (case-insensitive), by name; all of them when `name` is empty.

    Args:
        name: part of a collection's name
        limit: at most this many collections (1-100)
    """
    root = _collections_dir()
    wanted = name.casefold().strip()
    found = []
    for path in sorted(root.glob("*.json")) if root.is_dir() else []:
        collection = _read_json(path)
        if collection is not None and wanted in collection.get("name", "").casefold():
            found.append(_summary(collection))
    found.sort(key=lambda c: (c["name"].casefold(), c["id"]))
    return found[: max(1, min(limit, 100))]


# --------------------------------------------------------------------------------------------
# The vector index


@tool(name="get_index_configuration")
def get_index_configuration(model: str | None = None) -> dict:
    """The document store's vector index under an embedding model: whether it exists, how many
    documents it covers (and how many of those vectors are current), its size and dimensions.

    Args:
        model: the embedding model (default: `ERGON_EMBEDDING_MODEL`, else the offline embedder)
    """
    from flows import document_vectors
    from flows.llm.embeddings import embedding_model

    name = embedding_model(model)
    folder = document_vectors._model_dir(name)
    known = {meta["id"]: meta["sha256"] for meta in documents.list_documents()}
    indexed = current = size = 0
    dimensions: set[int] = set()
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            entry = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue  # half-copied or foreign: ensure_indexed embeds the document again
        indexed += 1
        size += path.stat().st_size
        current += int(known.get(entry.get("id")) == entry.get("sha256"))
        if isinstance(entry.get("dimensions"), int):
            dimensions.add(entry["dimensions"])
    root = documents_dir() / document_vectors.FOLDER
    others = sorted(p.name for p in root.iterdir() if p.is_dir() and p != folder) if root.is_dir() else []
    return {"enabled": True, "exists": indexed > 0, "model": name,
            "index_name": f"{document_vectors.FOLDER}/{folder.name}", "document_count": len(known),
            "indexed_count": indexed, "current_count": current, "size_bytes": size,
            "embedding_dimensions": {"text": max(dimensions) if len(dimensions) == 1 else None},
            "mixed_dimensions": sorted(dimensions) if len(dimensions) > 1 else [], "other_indexes": others}
