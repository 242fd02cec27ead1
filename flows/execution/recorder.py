"""The engine's :class:`~flows.runtime.engine.Recorder`, writing Ergon's store: the run's one writer while it executes.

One ``StoreRecorder`` per flow-run execution, made by :mod:`flows.execution.body` and handed to
the engine (as its recorder) and to the bodies (as their ``RunState`` port): while a run
executes, nothing else writes its status. :meth:`StoreRecorder.open` finds the run the flow
is executing — the one the caller created (``ergon run``, a parent flow, ``ergon runs resume``),
or the run already linked to this Prefect flow run (Prefect retried the flow), or a new one (a
deployment started it) — and reports whether it starts fresh or continues from a checkpoint.

A completed visit and the run's new context are written in one transaction
(:func:`flows.store.visits.checkpoint_visit`), so a crash can never leave a visit marked done with
the context from before it, or the reverse.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from compiler.plan import Plan, PlanNode
from flows import moments
from flows.execution.request import RunRequest
from flows.runtime.effects import TASK_RUN_ID, RunResult
from flows.runtime.engine import VisitRecord
from flows.runtime.errors import ErrorKind
from flows.runtime.supervision import ProcessEvent, Verdict
from flows.store import run_events
from flows.store import runs as run_store
from flows.store import tasks as task_store
from flows.store import visits as visit_store
from flows.store.diff import context_diff
from flows.store.models import RunStatus, VisitStatus


class StoreRecorder:
    """Visits, checkpoints and the run's lifecycle in the store."""

    def __init__(self, run_id: str, *, fresh: bool, context: dict[str, Any], past: Sequence[Any] = (),
                 run_type: str = "programmatic"):
        self.run_id = run_id
        self.fresh = fresh
        #: programmatic | supervised (:mod:`flows.runtime.supervision`)
        self.run_type = run_type
        self.context = context
        self._past = [VisitRecord(v.id, v.node_id, v.status, v.next_node, v.item_key, v.parent_visit_id, v.output)
                      for v in past]
        # This recorder is the only writer of the run's visits while it runs, so it numbers
        # them itself (no lock, no MAX query per visit).
        self._sequence = max((v.sequence for v in past), default=0)
        self._started: dict[str, Any] = {}
        self._status: RunStatus = "running"

    # ------------------------------------------------------------------ lifecycle
    @classmethod
    def open(cls, plan: Plan, *, request: RunRequest, prefect_flow_run_id: str | None, inputs: dict[str, Any],
             host: str, pid: int, catalog_sources: list[str] | None = None) -> StoreRecorder:
        found = run_store.take_up_run(request.run_id, prefect_flow_run_id, pid=pid, host=host)
        if found is None:
            created = run_store.create_run(
                plan.name, content_hash=request.content_hash, inputs=inputs,
                trigger=request.trigger, started_by=request.started_by, parent_run_id=request.parent_run_id,
                parent_visit_id=request.parent_visit_id, prefect_flow_run_id=prefect_flow_run_id,
                run_id=request.run_id, catalog_sources=catalog_sources,
                run_type=request.run_type or plan.run_type,
            )
            found = run_store.take_up_run(created.id, prefect_flow_run_id, pid=pid, host=host)
            assert found is not None, "a run created a moment ago is gone"
        run, past = found
        if request.deployment and (run.deployment, run.work_pool) != (request.deployment, request.work_pool):
            run_store.update_run(run.id, deployment=request.deployment, work_pool=request.work_pool)
        return cls(run.id, fresh=not past, context=dict(run.context or {}), past=past, run_type=run.run_type)

    def set_context(self, context: dict[str, Any]) -> None:
        self.context = context
        run_store.update_run_context(self.run_id, context)

    def end(self, status: RunStatus, outcome: str | None, context: dict[str, Any], error: str | None,
            error_kind: ErrorKind | None = None) -> None:
        run = run_store.set_run_status(self.run_id, status, outcome=outcome, error=error, error_kind=error_kind,
                                       context=context)
        moments.call("run.recorded", run)  # what its human tasks become (flows.runs.answers)

    def heartbeat(self) -> None:
        run_store.heartbeat(self.run_id)

    # ------------------------------------------------------------------ RunState port (human tasks)
    def status(self) -> RunStatus | None:
        return run_store.run_status(self.run_id)

    def mark_paused(self) -> None:
        if run_store.run_status(self.run_id) == "running":
            run_store.set_run_status(self.run_id, "paused")

    def mark_running_if_idle(self) -> None:
        if run_store.run_status(self.run_id) == "paused" and task_store.open_tasks_count(self.run_id) == 0:
            run_store.set_run_status(self.run_id, "running")

    @staticmethod
    def child_result(parent_run_id: str, parent_visit_id: str | None, state: Any) -> RunResult:
        """The finished child run of a sub-process visit, read back from the store."""
        children = [r for r in run_store.child_runs(parent_run_id) if r.parent_visit_id == parent_visit_id]
        if not children:
            message = getattr(state, "message", None) or "the sub-process did not start"
            return RunResult(run_id="", status="failed", outcome=None, context={}, error=message, error_kind="internal")
        child = children[-1]
        return RunResult(run_id=child.id, status=child.status, outcome=child.outcome,
                         context=dict(child.context or {}), error=child.error,
                         error_kind=cast(ErrorKind | None, child.error_kind))

    # ------------------------------------------------------------------ Recorder protocol
    def start_visit(self, *, node: PlanNode, attempt: int, input: Any, parent_visit_id: str | None = None,
                    item_key: str | None = None) -> str:
        self._sequence += 1
        visit_id, started_at = visit_store.begin_visit(
            self.run_id, node.id, node.type, sequence=self._sequence, input=input, item_key=item_key,
            parent_visit_id=parent_visit_id, attempt=attempt, prefect_task_run_id=TASK_RUN_ID.get())
        self._started[visit_id] = started_at
        return visit_id

    def reopen_visit(self, visit_id: str) -> None:
        self._started[visit_id] = visit_store.reopen_visit(visit_id)

    def finish_visit(self, visit_id: str, *, status: str, output: Any = None, error: str | None = None,
                     next_node: str | None = None, old_context: dict | None = None,
                     new_context: dict | None = None, child_run_id: str | None = None,
                     error_kind: ErrorKind | None = None, input: Any = None,
                     submission: tuple[str, dict[str, list[dict[str, Any]]]] | None = None) -> None:
        diff = context_diff(old_context or {}, new_context) if new_context is not None else None
        # the engine's Recorder protocol passes the status as a str; close_visit checks it
        self._status = visit_store.close_visit(visit_id, self.run_id, started_at=self._started.pop(visit_id),
                                               status=cast(VisitStatus, status), output=output, context_diff=diff,
                                               error=error, error_kind=error_kind, next_node=next_node,
                                               context=new_context, input=input,
                                               submission=submission) or self._status
        if new_context is not None:
            self.context = new_context

    def skip_visit(self, *, node: PlanNode, reason: str, status: str = "skipped", next_node: str | None = None) -> None:
        visit_id = self.start_visit(node=node, attempt=1, input=None)
        self.finish_visit(visit_id, status=status, error=reason, next_node=next_node)

    # ------------------------------------------------------------------ supervised runs
    def reroute(self, visit_id: str, target: str | None) -> None:
        visit_store.set_next_node(visit_id, target)

    def record_verdict(self, event: ProcessEvent, verdict: Verdict) -> None:
        command = verdict.command
        run_events.add_event(self.run_id, "command", command.name, actor="supervisor", node_id=event.node_id,
                             args={"event": event.kind, "args": command.args},
                             outcome="accepted" if verdict.accepted else "refused", reason=verdict.reason)

    def past_visits(self) -> list[VisitRecord]:
        """The visits as they were when the run (re)started: what resume decisions need."""
        return self._past

    def cancel_requested(self) -> bool:
        """Read from the last checkpoint's transaction (fresh at every node boundary)."""
        if not self._started and self._sequence == 0:  # before the first visit: ask the store
            self._status = run_store.run_status(self.run_id) or self._status
        return self._status in ("cancelling", "cancelled")

