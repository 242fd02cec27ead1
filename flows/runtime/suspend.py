"""Waiting for a person without a process: suspend the run when it executes under a deployment.

A blocking pause (:func:`flows.runtime.human._await_answer`) keeps the flow-run process alive
for as long as the task stays open. Under a deployment Prefect can do better: ``suspend_flow_run``
puts the run in ``Suspended`` (a paused state), **the process exits** and frees its worker slot;
when the task is answered (``ergon tasks answer`` → :func:`flows.resume.resume_answered` →
Prefect's resume), Prefect reschedules the same flow run and a worker runs the flow body again
**from the top**, in a new process. That re-entry is safe because the engine continues from the
store's checkpoint (completed visits are never repeated), and the human-task visit asks again
with the **same key**, so Prefect hands back the stored answer instead of suspending again.

What this module decides and provides:

* :func:`suspendable` — suspend only a run's *own* flow run started from a deployment (Prefect
  refuses suspending subflows and runs without a deployment), and only when the task has no
  ``timeout``: a suspended run has no process left to take ``on_timeout`` when the deadline
  passes, so timed tasks keep the blocking pause, which routes exactly.
* :func:`reentered_task` — on re-entry the engine starts a new visit of the node (the old one was
  recorded ``paused``); the task the earlier execution created is found through that chain of
  paused visits, so no second task is created and the same pause key is used. An agent asking
  several questions in one visit gets them back in order (the n-th question of this execution
  is the n-th task of the earlier ones).
* :func:`suspend_for_answer` — suspend, or return the answer when this key already fired.
  Called from inside the node's Prefect task run, so it names the flow run explicitly (Prefect
  refuses "suspend the current run" from a task) and then raises :class:`RunSuspended`, Prefect's
  ``Pause`` signal, which unwinds the task and the flow body and ends the process cleanly.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from prefect.exceptions import Pause

#: questions asked so far by each visit in this process (the n-th maps to the n-th earlier task)
_asked: defaultdict[str, int] = defaultdict(int)


class RunSuspended(Pause):
    """The run suspended for a person's answer: its process must end now (Prefect's ``Pause``).

    ``visit_status`` tells the engine to record the visit as ``paused`` rather than failed."""

    visit_status = "paused"


def suspendable(timeout: float | None) -> bool:
    """Whether the current flow run can suspend instead of blocking (see the module docstring)."""
    from prefect.context import FlowRunContext

    ctx = FlowRunContext.get()
    run = ctx.flow_run if ctx else None
    return bool(timeout is None and run is not None and run.deployment_id and run.parent_task_run_id is None)


def reentered_task(run_id: str, node_id: str, visit_id: str | None) -> Any:
    """The task an earlier, suspended execution of this visit created — None when it is new."""
    from flows.store import repo

    if not visit_id:
        return None
    nth = _asked[visit_id]
    _asked[visit_id] += 1
    visits = [v for v in repo.visits_for_run(run_id) if v.parent_visit_id is None]
    position = next((i for i, v in enumerate(visits) if v.id == visit_id), None)
    if position is None:
        return None
    chain = set()  # the paused visits of this node right before this one: the executions it continues
    for earlier in reversed(visits[:position]):
        if earlier.node_id != node_id or earlier.status != "paused":
            break
        chain.add(earlier.id)
    if not chain:
        return None
    tasks = sorted((t for t in repo.tasks_for_run(run_id) if t.visit_id in chain), key=lambda t: t.created_at)
    return tasks[nth] if nth < len(tasks) else None


async def suspend_for_answer(fields: list[dict[str, Any]], model_name: str, prompt: str, key: str) -> dict[str, Any]:
    """Suspend the run until the task keyed ``key`` is answered; the answer when it already was."""
    from prefect.context import FlowRunContext
    from prefect.flow_runs import asuspend_flow_run

    from flows import humans

    ctx = FlowRunContext.get()
    model = humans.run_input_model(fields, model_name, description=prompt)
    # The key fired before (this is the re-entry after the resume): Prefect rejects the new
    # suspension and returns the input stored with the resume.
    run_input = await asuspend_flow_run(wait_for_input=model, flow_run_id=ctx.flow_run.id, key=key)
    if run_input is not None:
        return humans.input_to_answer(run_input)
    request = getattr(ctx, "flow_run_suspension_request", None)
    state = request.get_state() if request is not None else None
    raise RunSuspended("suspended until the task is answered", state=state)
