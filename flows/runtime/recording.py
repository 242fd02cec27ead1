"""The engine's :class:`~flows.runtime.engine.Recorder`, writing Ergon's store.

One ``StoreRecorder`` per flow-run execution. :meth:`StoreRecorder.open` finds the run the flow
is executing — the one the caller created (``ergon run``, a parent flow, ``ergon runs resume``),
or the run already linked to this Prefect flow run (Prefect retried the flow), or a new one (a
deployment started it) — and reports whether it starts fresh or continues from a checkpoint.

A completed visit and the run's new context are written in one transaction
(:func:`flows.store.repo.checkpoint_visit`), so a crash can never leave a visit marked done with
the context from before it, or the reverse.
"""

from __future__ import annotations

from typing import Any

from compiler.plan import Plan, PlanNode
from flows.runtime.bodies import ChildResult
from flows.runtime.engine import VisitRecord
from flows.store import repo
from flows.store.diff import context_diff


class StoreRecorder:
    """Visits, checkpoints and the run's lifecycle in the store."""

    def __init__(self, run_id: str, *, fresh: bool, context: dict[str, Any]):
        self.run_id = run_id
        self.fresh = fresh
        self.context = context
        self._past: list[VisitRecord] | None = None

    # ------------------------------------------------------------------ lifecycle
    @classmethod
    def open(cls, plan: Plan, *, request: Any, prefect_flow_run_id: str | None, inputs: dict[str, Any],
             host: str, pid: int) -> StoreRecorder:
        run = None
        if request.run_id:
            run = repo.get_run(request.run_id)
        if run is None and prefect_flow_run_id:
            run = repo.get_run_by_prefect_id(prefect_flow_run_id)
        if run is None:
            run = repo.create_run(
                plan.name, content_hash=request_content_hash(request, plan), inputs=inputs,
                trigger=request.trigger, started_by=request.started_by, parent_run_id=request.parent_run_id,
                parent_visit_id=request.parent_visit_id, prefect_flow_run_id=prefect_flow_run_id,
                run_id=request.run_id,
            )
        elif prefect_flow_run_id and run.prefect_flow_run_id != prefect_flow_run_id:
            repo.update_run(run.id, prefect_flow_run_id=prefect_flow_run_id)
        fresh = not repo.visits_for_run(run.id)
        if run.status != "running":
            repo.set_run_status(run.id, "running", pid=pid, host=host)
        else:
            repo.update_run(run.id, pid=pid, host=host)
        return cls(run.id, fresh=fresh, context=dict(run.context or {}))

    def set_context(self, context: dict[str, Any]) -> None:
        self.context = context
        repo.update_run_context(self.run_id, context)

    def end(self, status: str, outcome: str | None, context: dict[str, Any], error: str | None) -> None:
        repo.update_run_context(self.run_id, context, heartbeat=False)
        repo.set_run_status(self.run_id, status, outcome=outcome, error=error)

    def heartbeat(self) -> None:
        repo.heartbeat(self.run_id)

    @staticmethod
    def child_result(parent_run_id: str, parent_visit_id: str | None, state: Any) -> ChildResult:
        """The finished child run of a sub-process visit, read back from the store."""
        children = [r for r in repo.child_runs(parent_run_id) if r.parent_visit_id == parent_visit_id]
        if not children:
            message = getattr(state, "message", None) or "the sub-process did not start"
            return ChildResult(run_id="", status="failed", outcome=None, context={}, error=message)
        child = children[-1]
        return ChildResult(run_id=child.id, status=child.status, outcome=child.outcome,
                           context=dict(child.context or {}), error=child.error)

    # ------------------------------------------------------------------ Recorder protocol
    def start_visit(self, *, node: PlanNode, attempt: int, input: Any, parent_visit_id: str | None = None,
                    item_key: str | None = None) -> str:
        visit = repo.start_visit(self.run_id, node.id, node.type, input=input, item_key=item_key,
                                 parent_visit_id=parent_visit_id, attempt=attempt)
        return visit.id

    def finish_visit(self, visit_id: str, *, status: str, output: Any = None, error: str | None = None,
                     next_node: str | None = None, old_context: dict | None = None,
                     new_context: dict | None = None, child_run_id: str | None = None) -> None:
        if new_context is not None:
            diff = context_diff(old_context or {}, new_context)
            repo.checkpoint_visit(visit_id, self.run_id, status=status, output=output, context_diff=diff,
                                  next_node=next_node, context=new_context)
            self.context = new_context
        else:
            repo.finish_visit(visit_id, status, output=output, error=error, next_node=next_node)

    def skip_visit(self, *, node: PlanNode, reason: str, status: str = "skipped") -> None:
        visit = repo.start_visit(self.run_id, node.id, node.type, input=None)
        repo.finish_visit(visit.id, status, error=reason)

    def past_visits(self) -> list[VisitRecord]:
        if self._past is None:  # read once: the engine only needs the state it started from
            self._past = [
                VisitRecord(v.id, v.node_id, v.status, v.next_node, v.item_key, v.parent_visit_id, v.output)
                for v in repo.visits_for_run(self.run_id)
            ]
        return self._past

    def cancel_requested(self) -> bool:
        return repo.run_status(self.run_id) in ("cancelling", "cancelled")


def request_content_hash(request: Any, plan: Plan) -> str | None:
    """The snapshot the run pins (set by the caller that compiled the plan)."""
    return getattr(request, "content_hash", None)
