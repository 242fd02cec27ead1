"""Operator controls: what an admin may do to a stopped run before it goes on, the same way from
the CLI and the run page, each recorded in the run's trail with who and why.

The controls act on a run that **failed** or **crashed** — a run no process executes, so its
store is the whole truth and nothing races the change — and then the run resumes from its
checkpoint (the CLI in its own process, the dashboard in the background). A running run is
refused (its process owns its context and route: cancel it first, or supervise it).

A **paused** run can be advanced too, while its process waits at the current node's human task
(a blocking pause): the task is withdrawn (closed ``cancelled``, "advanced to … by …"), and the
waiting process, which watches its task while it waits, completes the visit towards the exit
without an answer and goes on (:class:`flows.runtime.errors.Advanced`). The other controls are
refused on a paused run (a person is being asked: answer or cancel the task), and so is an
advance when nothing waits (a run suspended under a deployment: answer or cancel its task) or
when the task belongs to an item of a fan-out (advancing leaves a whole node).

The run's *current node* is the node of its last top-level visit that did not complete (the one
a resume would redo), else the node its last completed visit was going to.

* :func:`advance` — leave the current node through one of its declared exits: the node is
  recorded ``skipped`` (``advanced by …``) with that exit as its next node.
* :func:`retry_node` — re-enter the current node (what a plain resume does), or another node
  that was visited before or is a declared exit of the current one.
* :func:`skip_node` — only where the node is ``skippable: true`` or the definition's supervisor
  policy has ``allow_skip`` (as for a supervisor); the run routes on over its context.
* :func:`set_context` — merge fields into the run's context, checked like a supervisor's
  ``set_context`` (``context.schema``, the 64 KB cap, never an ``_`` field).

Only admins may use them (:class:`ControlRefused` otherwise). A refusal is recorded too, with its
reason. Explaining a definition, a node or a guard is :mod:`flows.runs.explain`.
"""

from __future__ import annotations

from typing import Any

from compiler.plan import Plan
from flows.errors import RunError
from flows.runs.lifecycle import snapshot_compiled
from flows.runtime.routing import next_node, run_artifact_keys
from flows.runtime.engine import resume_node
from flows.runtime.errors import NoTransition
from flows.runtime.supervision import set_context_problem, skippable
from flows.store import people as people_store
from flows.store import run_events
from flows.store import runs as run_store
from flows.store import tasks as task_store
from flows.store import visits as visit_store
from flows.store.models import TASK_OPEN, Run

#: the statuses a control acts on
STOPPED = ("failed", "crashed")


class ControlRefused(RunError):
    """The control was refused (the reason says why; the run is unchanged)."""


def current_node(run: Run) -> str | None:
    """Where the stopped run is: where a resume would continue (:func:`flows.runtime.engine.resume_node`);
    None before its first visit."""
    return resume_node(visit_store.visits_for_run(run.id))[0]


def _prepare(run_id: str, command: str, actor: str, why: str, args: dict[str, Any], *,
             paused: bool = False) -> tuple[Run, Plan, str]:
    """The run, its plan and its current node; refuses (and records the refusal) when the
    control may not be used."""
    run = run_store.require_run(run_id)

    def refuse(reason: str) -> ControlRefused:
        return _refuse(run, command, actor, why, None, args, reason)

    user = people_store.get_user(actor)
    if user is None or not user.is_admin:
        raise refuse(f"only admins use operator controls ({actor} is not one)")
    if not why.strip():
        raise refuse("say why (--why): the reason is kept in the run's trail")
    if run.status not in STOPPED and not (paused and run.status == "paused"):
        hint = {"paused": "a person is being asked: answer or cancel its task",
                "running": "its process owns it: cancel it first"}.get(run.status, "it is over")
        raise refuse(f"run {run.id} is {run.status}; operator controls act on failed or crashed runs ({hint})")
    from flows.runs.sources import catalog_for_run

    plan = snapshot_compiled(run, catalog_for_run(run)).plan
    if plan.control != "state_machine":
        raise refuse(f"`{plan.name}` is a {plan.kind}: operator controls steer a process's steps")
    node = current_node(run)
    if node is None:
        raise refuse(f"run {run.id} has no visit yet: resume it to start")
    return run, plan, node


def _record(run: Run, command: str, actor: str, why: str, node: str | None, args: dict[str, Any],
            outcome: str, reason: str | None = None) -> None:
    run_events.add_event(run.id, "command", command, actor=actor, node_id=node,
                         args={"event": "operator", "args": args, "why": why}, outcome=outcome, reason=reason)


def _accepted(run: Run, command: str, actor: str, why: str, node: str, args: dict[str, Any]) -> None:
    _record(run, command, actor, why, node, args, "accepted")


def _refuse(run: Run, command: str, actor: str, why: str, node: str | None, args: dict[str, Any],
            reason: str) -> ControlRefused:
    _record(run, command, actor, why, node, args, "refused", reason)
    return ControlRefused(reason)


def _pass_over(run: Run, plan: Plan, node: str, target: str, note: str) -> None:
    """Record ``node`` passed over (skipped) towards ``target``: where the resume continues."""
    v = visit_store.start_visit(run.id, node, plan.nodes[node].type)
    visit_store.finish_visit(v.id, status="skipped", error=note, next_node=target)


def advance(run_id: str, to: str, *, actor: str, why: str) -> str:
    """Leave the current node through its declared exit ``to``; returns the current node. A
    paused run's waiting process goes on by itself; a stopped run is then resumed by the caller."""
    args: dict[str, Any] = {"to": to}
    run, plan, node = _prepare(run_id, "advance", actor, why, args, paused=True)
    exits = [e.target for e in plan.successors(node)]
    if to not in exits:
        raise _refuse(run, "advance", actor, why, node, args,
                      f"`{to}` is not a declared exit of `{node}` (exits: {', '.join(exits) or 'none'})")
    if run.status == "paused":
        _withdraw_task(run, node, to, actor, why, args)
        return node
    _pass_over(run, plan, node, to, f"advanced by {actor}: {why}")
    _accepted(run, "advance", actor, why, node, args)
    return node


def _withdraw_task(run: Run, node: str, to: str, actor: str, why: str, args: dict[str, Any]) -> None:
    """Advance a paused run: close the task its process waits for; that process routes to ``to``."""
    from flows.runs.cancel import process_waiting

    visits = {v.id: v for v in visit_store.visits_for_run(run.id)}
    waiting = [t for t in task_store.tasks_for_run(run.id) if t.status in TASK_OPEN and t.node_id == node
               and t.visit_id in visits and visits[t.visit_id].parent_visit_id is None]
    if not process_waiting(run) or not waiting:
        raise _refuse(run, "advance", actor, why, node, args,
                      f"run {run.id} is paused with no process waiting at `{node}` (suspended under a deployment, "
                      "or a task of a fan-out item): answer or cancel its task")
    [task] = waiting[-1:]
    # the trail first: the waiting process finds the advance when it sees its task closed
    _accepted(run, "advance", actor, why, node, {**args, "task_id": task.id})
    task_store.close_task(task.id, "cancelled", actor=actor, reason=f"advanced to `{to}` by {actor}: {why}")


def retry_node(run_id: str, node: str | None = None, *, actor: str, why: str) -> str:
    """Re-enter the current node, or ``node``; returns the node the resume enters."""
    args = {"node": node}
    run, plan, current = _prepare(run_id, "retry_node", actor, why, args)
    target = node or current
    visited = {v.node_id for v in visit_store.visits_for_run(run.id)}
    exits = {e.target for e in plan.successors(current)}
    if target not in plan.nodes or plan.nodes[target].type == "final":
        raise _refuse(run, "retry_node", actor, why, current, args, f"`{target}` is not a node that can run again")
    if target != current and target not in visited and target not in exits:
        raise _refuse(run, "retry_node", actor, why, current, args,
                      f"`{target}` is neither `{current}`, a node visited before, nor a declared exit of `{current}`")
    if target != current:
        _pass_over(run, plan, current, target, f"left by {actor} to retry `{target}`: {why}")
    _accepted(run, "retry_node", actor, why, current, args)
    return target


def skip_node(run_id: str, *, actor: str, why: str) -> str:
    """Skip the current node (where it may be skipped); returns the node the run goes to."""
    run, plan, node = _prepare(run_id, "skip_node", actor, why, {})
    if not skippable(plan, plan.nodes[node]):
        raise _refuse(run, "skip_node", actor, why, node, {},
                      f"`{node}` is not skippable: it needs `skippable: true`, or `metadata.supervisor.allow_skip`")
    edges = sorted(plan.successors(node), key=lambda e: e.order)
    try:
        target = next_node(plan.nodes[node], edges, dict(run.context or {}), None, run_artifact_keys(run.id))
    except NoTransition as exc:
        raise _refuse(run, "skip_node", actor, why, node, {}, f"{exc}; use advance to pick the exit") from None
    assert target is not None
    _pass_over(run, plan, node, target, f"skipped by {actor}: {why}")
    _accepted(run, "skip_node", actor, why, node, {"to": target})
    return target


def set_context(run_id: str, updates: dict[str, Any], *, actor: str, why: str) -> dict[str, Any]:
    """Merge ``updates`` into the stopped run's context; returns the new context."""
    args = {"updates": updates}
    run, plan, node = _prepare(run_id, "set_context", actor, why, args)
    context = dict(run.context or {})
    problem = set_context_problem(updates, plan=plan, context=context)
    if problem is not None:
        raise _refuse(run, "set_context", actor, why, node, args, problem)
    new = {**context, **updates}
    run_store.update_run_context(run.id, new, heartbeat=False)
    _accepted(run, "set_context", actor, why, node, args)
    return new
