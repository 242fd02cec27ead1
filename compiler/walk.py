"""Walking the nodes of a definition, including the ones nested inside other nodes.

A node can hold another node in three places: the body of a ``foreach`` (``node``), the arms of a
``branch`` (``branches[i].node``) and the inline child definition of a ``process`` node
(``process_definition``, a whole process with its own context and nodes). Passes that check
*every* node — authoring rules, references — would each have to re-implement that recursion and
get the document paths right; they use these two generators instead.

* :func:`iter_definitions` yields the definition itself and every inline child definition, each
  with the document path it sits at. An inline definition has its own context and graph, so
  passes treat it as a definition of its own.
* :func:`iter_nodes` yields the nodes *of one definition*: its top-level nodes and the fan-out
  children nested in them (not the nodes of inline child definitions — those belong to the
  child, see above).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from compiler.errors import DocPath
from compiler.ir import BranchNode, ForeachNode, HumanTaskNode, Node, PipelineDef, ProcessDef, ProcessNode, ToolNode

Graph = ProcessDef | PipelineDef


@dataclass(frozen=True, slots=True)
class NodeSite:
    """A node, where it is written, and who holds it."""

    id: str  # the node id; a fan-out child carries the id of the node holding it
    node: Node  # one of the IR node classes
    path: DocPath  # path of the node's mapping in the document
    owner: Graph  # the definition whose context the node reads and writes
    parent: NodeSite | None = None  # the foreach/branch node of a fan-out child

    @property
    def is_child(self) -> bool:
        return self.parent is not None


def iter_definitions(defn: Graph, path: DocPath = ()) -> Iterator[tuple[Graph, DocPath]]:
    """``defn`` and every inline ``process_definition`` inside it, depth first."""
    yield defn, path
    for site in iter_nodes(defn, path):
        node = site.node
        if isinstance(node, ProcessNode) and node.process_definition is not None:
            yield from iter_definitions(node.process_definition, (*site.path, "process_definition"))


def iter_nodes(defn: Graph, path: DocPath = ()) -> Iterator[NodeSite]:
    """Top-level nodes of ``defn`` in document order, each followed by its fan-out children."""
    for nid, node in defn.nodes.items():
        site = NodeSite(nid, node, (*path, "nodes", nid), defn)
        yield site
        yield from _children(site)


def _children(site: NodeSite) -> Iterator[NodeSite]:
    node = site.node
    if isinstance(node, ForeachNode):
        kids = [(node.node, (*site.path, "node"))]
    elif isinstance(node, BranchNode):
        kids = [(arm.node, (*site.path, "branches", i, "node")) for i, arm in enumerate(node.branches)]
    else:
        return
    for kid, kid_path in kids:
        child = NodeSite(site.id, kid, kid_path, site.owner, site)
        yield child
        # a child that is itself a fan-out node is an error (fanout-child), but its own children
        # are still checked so that one mistake does not hide the others
        yield from _children(child)


def written(node, field: str) -> bool:
    """Whether the author wrote routing field ``field`` (`transitions`, `needs`, `when`) on a node.

    `when: false` is a rule too; an empty list is nothing.
    """
    value = getattr(node, field)
    return value is not None if field == "when" else bool(value)


def sure_writes(node) -> list[str]:
    """The fields of ``node.writes`` a completed visit of ``node`` is sure to have set.

    ``writes`` is what a node *may* write; a fixed ``config.context_update`` (no tool) and a
    ``set_context`` call with literal ``updates`` write exactly their keys, so a declared field
    they leave out is not set by them (``context_update: null`` sets nothing at all); a human
    task's optional field without a natural empty value may be left out of the answer.
    """
    if isinstance(node, HumanTaskNode):
        # an optional number, integer or select left out of the answer is not written (text
        # gets "", a checkbox false): only required fields and those with a value always arrive
        loose = {f.name for f in node.task.fields
                 if not f.required and f.default is None and f.type not in ("text", "string", "boolean")}
        return [f for f in node.writes if f not in loose]
    if isinstance(node, ToolNode):
        fixed = node.config.context_update if node.config else None
        if not node.tool and node.config is not None:
            return [f for f in node.writes if f in (fixed or {})]
        updates = (node.input or {}).get("updates") if node.tool == "set_context" else None
        if isinstance(updates, dict):
            return [f for f in node.writes if f in updates or f in (fixed or {})]
    return list(node.writes)
