"""Run-time parts of the workflow DSL that a pipeline node cannot say: ``fetch`` and ``projection``.

The lowering (:mod:`compiler.lower`) keeps a step's ``fetch`` (with its ``${}`` references
turned into Jinja) and ``projection`` in ``PlanNode.extras``; the ``tool`` body
(:mod:`flows.runtime.bodies.tool`) applies them around the activity call:

1. ``fetch`` is rendered over the context, run against the local document store
   (:mod:`flows.documents`) and bound as ``fetched`` for the step's own ``params``;
2. the activity is called with the rendered ``params``;
3. ``projection`` is applied to the activity's result;
4. the projected result is what ``output`` receives.

**fetch** — ``type: document`` (the only type); ``query`` is a mapping of metadata fields
(``id``, ``name``, ``content_type``, ``source``…) to the values they must equal, or ``text``
for a word search (:func:`flows.documents.search`); ``select`` keeps only these fields of each
document (``content`` is the text); ``limit`` caps the number of documents (default 10).
A query by ``id`` fetches one document (a mapping), any other query a list. ``on_not_found``
is ``throw`` (default: the step fails when nothing matches) or ``ignore`` (``null`` / ``[]``).

**projection** — ``$include`` keeps only the listed paths, ``$exclude`` drops them; a path is a
field name or a dotted path into nested mappings (``owner.email``). A list result is projected
element by element.
"""

from __future__ import annotations

import copy
from typing import Any

from compiler.plan import FetchSpec, Projection
from flows.runtime.errors import NodeFailed

DEFAULT_FETCH_LIMIT = 10


def fetch(spec: FetchSpec, step: str) -> Any:
    """Run a rendered ``fetch`` spec against the document store."""
    from flows import documents

    kind = spec.get("type", "document")
    if kind != "document":
        raise NodeFailed(f"`{step}`: fetch type `{kind}` is not supported (only `document`)", kind="definition")
    query = dict(spec.get("query") or {})
    select = spec.get("select")
    limit = int(spec.get("limit") or DEFAULT_FETCH_LIMIT)
    on_not_found = spec.get("on_not_found", "throw")

    def shaped(doc: dict[str, Any]) -> dict[str, Any]:
        return {k: doc.get(k) for k in select} if select else doc

    if "id" in query:
        try:
            doc = documents.get(str(query.pop("id")))
        except documents.DocumentError as exc:
            if on_not_found == "ignore":
                return None
            raise NodeFailed(f"`{step}`: fetch found nothing: {exc}", kind="world") from None
        if any(doc.get(k) != v for k, v in query.items()):
            if on_not_found == "ignore":
                return None
            raise NodeFailed(f"`{step}`: fetch found no document matching {spec.get('query')}", kind="world")
        return shaped(doc)
    text = query.pop("text", None)
    if text is not None:
        candidates = [documents.metadata(h.id) for h in documents.search(str(text), limit=50)]
    else:
        candidates = documents.list_documents()
    found = [documents.get(m["id"]) for m in candidates if all(m.get(k) == v for k, v in query.items())][:limit]
    if not found and on_not_found != "ignore":
        raise NodeFailed(f"`{step}`: fetch found no document matching {spec.get('query')}", kind="world")
    return [shaped(d) for d in found]


def _drop(value: dict[str, Any], path: list[str]) -> None:
    head, *rest = path
    if head not in value:
        return
    if not rest:
        del value[head]
    elif isinstance(value[head], dict):
        _drop(value[head], rest)


def _keep(value: dict[str, Any], paths: list[list[str]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for head in dict.fromkeys(p[0] for p in paths):
        if head not in value:
            continue
        subs = [p[1:] for p in paths if p[0] == head]
        if any(not s for s in subs) or not isinstance(value[head], dict):
            out[head] = value[head]
        else:
            out[head] = _keep(value[head], subs)
    return out


def project(result: Any, projection: Projection, step: str) -> Any:
    """``result`` with ``$include`` / ``$exclude`` applied (see the module docstring)."""
    if isinstance(result, list):
        return [project(item, projection, step) for item in result]
    if not isinstance(result, dict):
        raise NodeFailed(f"`{step}`: projection needs a mapping result, got {type(result).__name__}",
                         kind="definition")
    if "$include" in projection:
        result = _keep(result, [p.split(".") for p in projection["$include"]])
    else:
        result = copy.deepcopy(result)
    for path in projection.get("$exclude", []):
        _drop(result, path.split("."))
    return result
