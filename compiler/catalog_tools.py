"""The built-in tools of the Vertesia catalog that Ergon provides beyond its first ones: names,
descriptions, parameters and results, for the checker.

They are built-ins like the others (:data:`compiler.tools.BUILTIN_TOOLS` and
:data:`compiler.builtin_signatures.BUILTIN_SIGNATURES` include these tables); they live in a
module of their own because they come as a group, from the seed's "Built-in Tools" page, and
run in ``flows/tools/builtins_catalog_*.py``. ``tests/tools`` holds each signature to the
registered tool's argument schema and return hint, as for every built-in. The catalog's tools
Ergon does not provide are in :mod:`compiler.unavailable_tools`.
"""

from __future__ import annotations

from compiler.tool_signatures import Parameter, Signature

_STRING = frozenset({"string"})
_INTEGER = frozenset({"integer"})
_BOOLEAN = frozenset({"boolean"})
_ARRAY = frozenset({"array"})
_OBJECT = frozenset({"object"})
_NULL = frozenset({"null"})

_Spec = tuple[frozenset[str] | None, bool]


def _sig(result: frozenset[str], **params: _Spec) -> Signature:
    return Signature({name: Parameter(name, kinds, required) for name, (kinds, required) in params.items()},
                     any_keyword=False, result=result)


#: Tool → one-line description (what ``ergon tools`` and the checker's hints show).
CATALOG_TOOLS: dict[str, str] = {
    # the run's artifacts (flows/tools/builtins_catalog_artifacts.py)
    "grep_artifacts": "Search the run's text artifacts for a regular expression, line by line.",
    "patch_artifact": "Literal find-and-replace edits in a text artifact (a new version).",
    "merge_artifacts": "Concatenate text artifacts in order into one artifact.",
    "render_markdown": "Render a markdown artifact to PDF, DOCX or HTML (artifact `out/<title>.<format>`).",
    "render_docx": "Export a DOCX artifact to PDF or markdown.",
    "inspect_pdf": "Read a PDF artifact page by page: page count, metadata, each page's size and text.",
    "edit_artifact_docx": "XPath edits of a DOCX artifact's word/document.xml (optionally as tracked changes).",
    # the document store (flows/tools/builtins_catalog_documents.py)
    "update_document": "Replace a document's text and/or merge properties (checked against its object type).",
    "create_content_object": "Import a text resource (https URL or artifact) as a document, with type, properties, tags, collection.",
    "get_object_type": "An object type: description, JSON Schema of its documents' properties, document count.",
    "create_or_update_object_type": "Define an object type (a JSON Schema for its documents' properties).",
    "create_collection": "Create a collection: a named group of documents.",
    "update_collection": "Change a collection's name, description or schema.",
    "add_to_collection": "Put documents into a collection.",
    "remove_from_collection": "Take documents out of a collection (the documents stay).",
    "get_collection": "A collection and its documents.",
    "search_collections": "Collections whose name contains a text.",
    "get_index_configuration": "The document store's vector index under an embedding model: size, coverage, dimensions.",
    # runs and their model calls (flows/tools/builtins_catalog_conversations.py)
    "search_conversations": "Search runs (conversations) by status, time, initiator and definition, newest first.",
    "analyze_conversation": "Analyze another run's recorded conversation with a prompt (model call), optionally to a schema.",
}

#: Tool → its parameters and the JSON type of its result.
CATALOG_SIGNATURES: dict[str, Signature] = {
    "grep_artifacts": _sig(_OBJECT, pattern=(_STRING, True), path_prefix=(_STRING | _NULL, False),
                           ignore_case=(_BOOLEAN, False), max_matches=(_INTEGER, False)),
    "patch_artifact": _sig(_OBJECT, path=(_STRING, True), edits=(_ARRAY, True)),
    "merge_artifacts": _sig(_OBJECT, paths=(_ARRAY, True), output_path=(_STRING, True), separator=(_STRING, False)),
    "render_markdown": _sig(_OBJECT, artifact_path=(_STRING, True), format=(_STRING, False),
                            title=(_STRING | _NULL, False), toc=(_BOOLEAN, False)),
    "render_docx": _sig(_OBJECT, docx_path=(_STRING, True), format=(_STRING, False),
                        output_path=(_STRING | _NULL, False), title=(_STRING | _NULL, False)),
    "inspect_pdf": _sig(_OBJECT, pdf_path=(_STRING, True), pages=(_ARRAY | _NULL, False), from_page=(_INTEGER, False),
                        to_page=(_INTEGER | _NULL, False)),
    "edit_artifact_docx": _sig(_OBJECT, path=(_STRING, True), structured_edits=(_ARRAY, True),
                               track_changes=(_BOOLEAN, False), author=(_STRING | _NULL, False)),
    "update_document": _sig(_OBJECT, id=(_STRING, True), content=(_STRING | _NULL, False), source=(_STRING | _NULL, False),
                            properties=(_OBJECT | _NULL, False)),
    "create_content_object": _sig(_OBJECT, location=(_STRING, True), name=(_STRING | _NULL, False),
                                  type=(_STRING | _NULL, False), properties=(_OBJECT | _NULL, False),
                                  tags=(_ARRAY | _NULL, False), collection_id=(_STRING | _NULL, False)),
    "get_object_type": _sig(_OBJECT, name=(_STRING, True)),
    "create_or_update_object_type": _sig(_OBJECT, name=(_STRING, True), description=(_STRING | _NULL, False),
                                         schema=(_OBJECT | _NULL, False)),
    "create_collection": _sig(_OBJECT, name=(_STRING, True), description=(_STRING | _NULL, False),
                              schema=(_OBJECT | _NULL, False), id=(_STRING | _NULL, False)),
    "update_collection": _sig(_OBJECT, collection_id=(_STRING, True), name=(_STRING | _NULL, False),
                              description=(_STRING | _NULL, False), schema=(_OBJECT | _NULL, False)),
    "add_to_collection": _sig(_OBJECT, collection_id=(_STRING, True), document_ids=(_ARRAY, True)),
    "remove_from_collection": _sig(_OBJECT, collection_id=(_STRING, True), document_ids=(_ARRAY, True)),
    "get_collection": _sig(_OBJECT, collection_id=(_STRING, True)),
    "search_collections": _sig(_ARRAY, name=(_STRING, False), limit=(_INTEGER, False)),
    "get_index_configuration": _sig(_OBJECT, model=(_STRING | _NULL, False)),
    "search_conversations": _sig(_OBJECT, status=(_STRING | _NULL, False), since=(_STRING | _NULL, False),
                                 until=(_STRING | _NULL, False), initiator=(_STRING | _NULL, False),
                                 interaction=(_STRING | _NULL, False), limit=(_INTEGER, False), offset=(_INTEGER, False),
                                 output_artifact=(_STRING | _NULL, False)),
    "analyze_conversation": _sig(_OBJECT, run_id=(_STRING, True), analyzer_prompt=(_STRING, True),
                                 result_schema=(_OBJECT | _NULL, False)),
}
