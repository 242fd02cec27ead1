"""`ergon documents add|list|show|search`: the local document store the document tools read."""

from __future__ import annotations

import json
from typing import Annotated

from cyclopts import App, Parameter
from rich.console import Console

from flows.cli import bounds
from flows.cli.output import error

documents_app = App(name="documents", help="The local document store (fetch_document, search_documents).")

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)


@documents_app.command(name="add")
def documents_add(
    path: str,
    *,
    id: Annotated[str | None, Parameter(name="--id")] = None,
    replace: bool = False,
    json_: Annotated[bool, Parameter(name="--json")] = False,
) -> int:
    """Copy a text file into the document store; prints its id.

    Parameters
    ----------
    path
        The file (UTF-8 text).
    id
        The document id (default: made from the file name).
    replace
        Overwrite the document with this id if it exists.
    json_
        Print the document's metadata as JSON.
    """
    from flows import documents

    try:
        meta = documents.add(path, id, replace=replace)
    except documents.DocumentError as exc:
        return error(exc, code=1)
    if json_:
        print(json.dumps(meta))
    else:
        out.print(f"{meta['id']}  [dim]{meta['name']}, {meta['size']} bytes[/]")
    return 0


@documents_app.command(name="list")
def documents_list(*, json_: Annotated[bool, Parameter(name="--json")] = False) -> int:
    """List the documents.

    Parameters
    ----------
    json_
        Print JSON.
    """
    from rich.table import Table

    from flows import documents

    docs = documents.list_documents()
    if json_:
        print(json.dumps({"documents": docs}))
        return 0
    table = Table("id", "name", "size", "type", "created")
    for d in docs:
        table.add_row(d["id"], d["name"], str(d["size"]), d["content_type"], d["created_at"][:19])
    out.print(table)
    out.print(f"[dim]{len(docs)} document(s)[/]")
    return 0


@documents_app.command(name="show")
def documents_show(id: str, *, json_: Annotated[bool, Parameter(name="--json")] = False) -> int:
    """Print a document's text (or, with --json, its metadata and text).

    Parameters
    ----------
    id
        The document id.
    json_
        Print JSON.
    """
    from flows import documents

    try:
        doc = documents.get(id)
    except documents.DocumentError as exc:
        return error(exc, code=1)
    print(json.dumps(doc) if json_ else doc["content"])
    return 0


@documents_app.command(name="search")
def documents_search(query: str, *, limit: Annotated[int, Parameter(validator=bounds.LIMIT)] = 5,
                     json_: Annotated[bool, Parameter(name="--json")] = False) -> int:
    """Search the documents the way `search_documents` does.

    Parameters
    ----------
    query
        Words to look for.
    limit
        At most this many results (1 to 100000).
    json_
        Print JSON.
    """
    from flows import documents

    hits = [h.as_dict() for h in documents.search(query, limit)]
    if json_:
        print(json.dumps({"hits": hits}))
        return 0
    for h in hits:
        out.print(f"{h['id']}  [dim]{h['score']:.3f}[/]  {h['snippet']}")
    if not hits:
        out.print("[dim]no match[/]")
    return 0
