"""A run exported whole: the one reader of every entity of a run (format :data:`EXPORT_FORMAT`).

Each part is read by its entity module in its own short transaction; a run that is still
executing can therefore export a visit whose calls were recorded a moment later than the visit
list was read (export finished runs for an exact record).
"""

from __future__ import annotations

from flows.store import artifacts as artifact_store
from flows.store import definitions as definition_store
from flows.store import runs as run_store
from flows.store import tasks as task_store
from flows.store import visits as visit_store
from flows.store import workstreams as workstream_store
from flows.store._common import dump

EXPORT_FORMAT = "ergon.run/1"


def export_run(run_id: str) -> dict:
    """Everything about one run as a JSON-able dict: the run, the definition snapshot it ran,
    visits, artifacts, LLM calls, tool calls (a workstream's carry its id), workstreams, and human
    tasks with their audit events."""
    run = run_store.require_run(run_id)
    task_rows = []
    for task in task_store.tasks_for_run(run_id):
        task_rows.append({**dump(task), "events": [dump(e) for e in task_store.task_events(task.id)]})
    return {
        "format": EXPORT_FORMAT,
        "run": dump(run),
        "definition": definition_store.get_snapshot(run.content_hash) if run.content_hash else None,
        "visits": [dump(v) for v in visit_store.visits_for_run(run_id)],
        "artifacts": [dump(a) for a in artifact_store.artifacts_for_run(run_id)],
        "llm_calls": [dump(c) for c in visit_store.llm_calls_for_run(run_id)],
        "tool_calls": [dump(c) for c in visit_store.tool_calls_for_run(run_id)],
        "workstreams": [dump(w) for w in workstream_store.for_run(run_id)],
        "tasks": task_rows,
        "children": [c.id for c in run_store.child_runs(run_id)],
    }

