"""Where a value came from: a version, the transformation that made it, and its inputs, back to
values nobody computed (imported, typed by a person, answered in a human task). A ``merged``
version's one input is the version it was copied from.

:func:`chain` walks the graph breadth-first over a bounded number of versions: a chain of
template steps is short, but a value may cite many inputs and a store is not trusted to be a
tree (a cycle cannot be written by the engine, yet the walk stops on one anyway).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from flows.store import submissions as submission_store
from flows.store.submissions import VersionInfo

#: how many versions one chain shows at most
MAX_VERSIONS = 500


@dataclass
class Link:
    """One version in a chain, and the links of the inputs its transformation read."""

    info: VersionInfo
    inputs: list[Link] = field(default_factory=list)

    @property
    def version_id(self) -> str:
        return self.info.value.version_id

    def to_dict(self) -> dict[str, Any]:
        v, t = self.info.value, self.info.transformation
        return {
            "version_id": v.version_id, "submission_id": self.info.submission_id, "form": self.info.form_name,
            "group": v.cell.group, "entry": v.cell.entry, "field": v.cell.field, "value": v.value,
            "source_type": v.source_type, "created_by": v.created_by, "created_at": v.created_at.isoformat(),
            "transformation": None if t is None else {
                "id": t["id"], "kind": t["kind"], "expression": t["expression"], "run_id": t["run_id"],
                "visit_id": t["visit_id"], "llm_call_id": t["llm_call_id"], "meta": t["meta"]},
            "inputs": [i.to_dict() for i in self.inputs],
        }


def chain(version_id: str, *, limit: int = MAX_VERSIONS) -> Link | None:
    """The provenance of one version (None when there is no such version)."""
    root_info = submission_store.versions([version_id]).get(version_id)
    if root_info is None:
        return None
    root = Link(root_info)
    seen = {version_id}
    frontier = [root]
    while frontier and len(seen) < limit:
        wanted = [i for link in frontier for i in link.info.inputs if i not in seen][: limit - len(seen)]
        found = submission_store.versions(wanted)
        nxt: list[Link] = []
        for link in frontier:
            for ref in link.info.inputs:
                if ref in found and ref not in seen:
                    seen.add(ref)
                    child = Link(found[ref])
                    link.inputs.append(child)
                    nxt.append(child)
        frontier = nxt
    return root


def leaves(link: Link) -> list[Link]:
    """The versions at the far end of a chain (nothing made them from other values)."""
    if not link.inputs:
        return [link]
    return [leaf for i in link.inputs for leaf in leaves(i)]
