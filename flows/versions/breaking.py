"""Which paused runs a new version would break, and why.

A run pauses on the snapshot it started with; if someone resumes it after a new version is
published it still finishes on its own snapshot. The warning is for the people who will answer
or migrate those runs: publishing a version that drops what they rely on means the new version
cannot take them over. A paused run of the definition is reported when the new Plan

* removes a node the run has visited or is paused at;
* changes the ``fields`` of a human task the run is waiting on (the question being answered
  would not be the question the new version asks);
* removes or retypes (a changed JSON-Schema ``type``) a context field of the run's version.

Runs already on the new content are not affected. Checking needs the old Plan of each run
(compiled from its snapshot) and the new one; the store reads are paused runs, their snapshots,
visits and tasks (:mod:`flows.store.runs`, ``definitions``, ``visits``, ``tasks``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from compiler.ir import HumanTaskNode
from flows.versions.diff import schema_type


@dataclass
class Break:
    """One paused run and what the new version breaks for it."""

    run_id: str
    definition_version: int | None
    paused_at: list[str]
    reasons: list[str] = field(default_factory=list)

    def line(self) -> str:
        on = f"v{self.definition_version}" if self.definition_version else "an unpublished draft"
        where = f"paused at {', '.join(self.paused_at)}" if self.paused_at else "paused"
        return f"run {self.run_id} ({where}, started on {on}): " + "; ".join(self.reasons)


def _task_fields(node: Any) -> Any:
    body = node.body if node is not None else None
    return body.task.fields if isinstance(body, HumanTaskNode) else None


def reasons_for(old_plan: Any, new_plan: Any, visited: set[str], waiting: set[str]) -> list[str]:
    """Why ``new_plan`` breaks a run of ``old_plan`` that visited ``visited`` and waits at ``waiting``."""
    reasons = []
    for node_id in sorted((visited | waiting) & set(old_plan.nodes)):
        if node_id not in new_plan.nodes:
            how = "is paused at" if node_id in waiting else "has visited"
            reasons.append(f"node `{node_id}`, which the run {how}, is removed")
    for node_id in sorted(waiting & set(new_plan.nodes) & set(old_plan.nodes)):
        old_fields, new_fields = _task_fields(old_plan.nodes[node_id]), _task_fields(new_plan.nodes[node_id])
        if old_fields != new_fields:
            reasons.append(f"the fields of human task `{node_id}`, which the run waits on, change")
    old_props = (old_plan.context_schema or {}).get("properties", {}) or {}
    new_props = (new_plan.context_schema or {}).get("properties", {}) or {}
    for name, prop in old_props.items():
        if name not in new_props:
            reasons.append(f"context field `{name}` is removed")
        elif schema_type(prop) != schema_type(new_props[name]):
            reasons.append(f"context field `{name}` changes type from {schema_type(prop)} to "
                           f"{schema_type(new_props[name])}")
    return reasons


def breaking_runs(name: str, new_plan: Any, new_hash: str, *, catalog: Any) -> list[Break]:
    """Paused runs of ``name`` on other content than ``new_hash`` that ``new_plan`` breaks."""
    from flows.store import definitions as definition_store
    from flows.store import runs as run_store
    from flows.store import tasks as task_store
    from flows.store import visits as visit_store
    from flows.store.models import TASK_OPEN

    runs, _ = run_store.list_runs(status="paused", definition=name, limit=100_000)
    out: list[Break] = []
    for run in runs:
        if not run.content_hash or run.content_hash == new_hash:
            continue
        content = definition_store.get_snapshot(run.content_hash)
        try:
            old_plan = catalog.compile_content(name, content, label=".snapshot").plan
        except Exception as exc:  # noqa: BLE001 - an old snapshot that no longer builds is reported, not fatal
            out.append(Break(run.id, run.definition_version, [], [f"its version could not be compared ({exc})"]))
            continue
        visited = {v.node_id for v in visit_store.visits_for_run(run.id)}
        waiting = {t.node_id for t in task_store.tasks_for_run(run.id) if t.status in TASK_OPEN}
        waiting |= {v.node_id for v in visit_store.visits_for_run(run.id) if v.status == "paused"}
        reasons = reasons_for(old_plan, new_plan, visited, waiting)
        if reasons:
            out.append(Break(run.id, run.definition_version, sorted(waiting), reasons))
    return out
