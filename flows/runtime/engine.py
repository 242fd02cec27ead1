"""The interpreter: runs a Plan's nodes in order, checkpointing every visit.

Two control styles share one visit routine:

* **state machine** (processes): one node at a time from ``initial``; after each visit the
  routing rules pick the next node (a person picks it among ``trigger: user`` exits); a ``final`` node ends the run with its id as the outcome.
* **DAG** (pipelines, lowered templates/workflows): every node whose needs are done starts at
  once; ``when`` false skips a node and (unless the lowering says otherwise) what needs it; a
  failure stops new starts, lets the nodes in flight finish, then fails the run.

A *visit* is one execution of a node. Its effect (an update to the context) is validated and
applied, and the visit is written to the store together with the new context **before** the next
node starts. Resuming a run therefore needs only the store: the context as of the last completed
visit, and where to go next. Completed visits (and completed foreach items) are never repeated.

``foreach`` and ``branch`` are recorded as one parent visit whose children (one per item/branch)
are visits of their own, each its own Prefect task run (``node[item_id]``).

A *supervised* run (:mod:`flows.runtime.supervision`) has a supervisor that hears each step of
the state machine and may steer it through checked commands, within the bounds of its policy;
without one, nothing below changes.

A state machine may loop, and a loop whose exit depends on a model's answer (a guard over an
interaction's output, an agent picking ``_next_node``) may never end. A run therefore makes at
most ``metadata.max_visits`` node visits (:class:`compiler.ir.RunLimits`, 1000 by default), then
fails (:class:`~flows.runtime.errors.LimitReached`, kind ``world``: a budget ran out). Each node
the state machine enters counts, skipped and failed ones included (not final nodes, nor the
items of a fan-out); a resumed run counts on from the visits its store records (each attempt of
a retried node, and a visit redone after an interruption, is one more).

The engine does not know Prefect: an :class:`Executor` runs each visit (the Prefect adapter makes
it a Prefect task run with the node's retry policy, :mod:`flows.prefect.executor`) and a
:class:`Recorder` writes the store (:mod:`flows.execution.recorder`).
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from typing import Any, Literal, Protocol

from compiler.guards import evaluate
from compiler.ir import FOREACH_MAX_ITEMS, BranchNode, CollectSpec, ForeachNode, RunLimits
from compiler.plan import Plan, PlanEdge, PlanNode
from compiler.templates import render
from flows.runtime.attempts import run_attempts
from flows.runtime.bodies import leaf_effect
from flows.runtime.context import apply_update, get_path
from flows.runtime.effects import Effect, Listener, Services, no_listener
from flows.runtime.errors import Advanced, ErrorKind, LimitReached, NodeFailed, NoTransition, RunCancelled, error_kind
from flows.runtime.parallel import mark_parallel
from flows.runtime.routing import ask_user_exit, next_node, run_artifact_keys
from flows.runtime.supervision import MAX_ROUNDS, Command, ProcessEvent, Supervisor, Tally, Verdict, check, exits_of, ordinal
from flows.secrets.redaction import redact

#: A fan-out's progress is told at most this often (seconds), and at its last item.
PROGRESS_EVERY = 0.1
#: A fan-out's worker lets the event loop run others after this many items, should none of
#: them have waited for anything (no-op tools, answers reused on resume).
YIELD_EVERY = 50
#: the key of a paused visit's output that holds the effect it computed before asking a person
_HELD = "held_effect"


class _FanoutProgress:
    """A fan-out's items ended so far, told to the listener as a ``progress`` event (``done``,
    ``failed``, ``total``) at most every :data:`PROGRESS_EVERY` seconds and at the last item: the
    CLI draws it on a terminal, Prefect's backend keeps the node's task run's progress artifact
    from it (:mod:`flows.prefect.progress`). Telling every item cost 10 µs an item of a
    10,000-item fan-out, more than a screen or Prefect's UI can show."""

    __slots__ = ("done", "failed", "listener", "node_id", "told", "told_at", "total")

    def __init__(self, listener: Listener, node_id: str, total: int) -> None:
        self.listener, self.node_id, self.total = listener, node_id, total
        self.done = self.failed = 0
        self.told: dict[str, int] | None = None
        self.told_at = 0.0

    def ended(self, status: str) -> None:
        self.done += 1
        self.failed += status == "failed"
        if self.done >= self.total or time.monotonic() - self.told_at >= PROGRESS_EVERY:
            self.tell()

    def tell(self) -> None:
        """Tell the counts as they are now (once per change): also after the last item to end,
        when a failure left the rest unstarted and the throttle held back the last counts."""
        counts = {"done": self.done, "failed": self.failed, "total": self.total}
        if counts != self.told:
            self.told, self.told_at = counts, time.monotonic()
            self.listener("progress", self.node_id, counts)

    def again(self, completed: int) -> None:
        """The node's task run is tried again: only its completed items count as done."""
        self.done, self.failed = completed, 0


def fanout_body(node: PlanNode) -> ForeachNode | BranchNode:
    """The body of a foreach or branch node."""
    body = node.body
    if not isinstance(body, (ForeachNode, BranchNode)):
        raise TypeError(f"node `{node.id}` is a `{node.type}` node, not a foreach or branch")
    return body


#: The reason recorded on a pipeline node skipped because its `when` was false (what route
#: coverage reads to count the `when` seen false).
WHEN_FALSE = "`when` is false"


@dataclass
class VisitRecord:
    """What the engine needs to know about a past visit to resume."""

    id: str
    node_id: str
    status: str
    next_node: str | None
    item_key: str | None
    parent_visit_id: str | None
    output: Any


class Recorder(Protocol):
    """Writes visits and checkpoints; implemented over the store by :mod:`flows.execution.recorder`."""

    def start_visit(self, *, node: PlanNode, attempt: int, input: Any, parent_visit_id: str | None = None,
                    item_key: str | None = None) -> str: ...

    def finish_visit(self, visit_id: str, *, status: str, output: Any = None, error: str | None = None,
                     next_node: str | None = None, old_context: dict | None = None,
                     new_context: dict | None = None, child_run_id: str | None = None,
                     error_kind: ErrorKind | None = None, input: Any = None,
                     submission: tuple[str, dict[str, list[dict[str, Any]]]] | None = None) -> None: ...

    def reopen_visit(self, visit_id: str) -> None:
        """Take up again a visit of :meth:`past_visits` that did not finish (a fan-out's parent)."""
        ...

    def skip_visit(self, *, node: PlanNode, reason: str, status: str = "skipped", next_node: str | None = None) -> None: ...

    def past_visits(self) -> list[VisitRecord]: ...

    def cancel_requested(self) -> bool: ...

    # supervised runs only
    def set_context(self, context: dict[str, Any]) -> None: ...

    def reroute(self, visit_id: str, target: str | None) -> None:
        """Record that a completed visit now goes to ``target`` (a supervisor's transition)."""
        ...

    def record_verdict(self, event: ProcessEvent, verdict: Verdict) -> None:
        """Add a supervisor's command and what became of it to the run's trail."""
        ...


class Executor(Protocol):
    """Runs one visit attempt loop (:class:`flows.prefect.executor.PrefectExecutor`: a Prefect task run with retries).

    An executor may say ``waits_between_attempts = False`` (``ergon test``'s): the items of a
    ``task_runs: node`` foreach, whose attempts the engine runs itself, then skip their delays too."""

    async def visit(self, node: PlanNode, run_name: str, attempt_fn: Callable[[int], Awaitable[Any]]) -> Any: ...


@dataclass
class Outcome:
    """How a run ended."""

    status: Literal["completed", "failed", "cancelled"]
    outcome: str | None
    context: dict[str, Any]
    error: str | None = None
    #: whose fault a failure is (:mod:`flows.runtime.errors`)
    error_kind: ErrorKind | None = None


@dataclass
class Engine:
    plan: Plan
    context: dict[str, Any]
    recorder: Recorder
    executor: Executor
    services: Services
    listener: Listener = no_listener
    #: the supervisor of a supervised run (None: programmatic)
    supervisor: Supervisor | None = None

    def __post_init__(self) -> None:
        #: effects of visits now asking a person to pick a `trigger: user` exit, by visit id
        self._held: dict[str, Effect] = {}
        #: supervised: nodes whose visit completed but no transition matched (node id → error)
        self._unrouted: dict[str, str] = {}
        #: the last visit checkpointed (a supervisor's transition re-routes it)
        self._last_visit: str | None = None
        #: nodes with a completed visit in this process (with past_visits: what retry_node may re-enter)
        self._visited: set[str] = set()
        #: one conversation: events of visits running at once (a foreach of tasks) take turns
        self._supervising = asyncio.Lock()
        #: what the supervisor has had applied, against its policy's bounds
        self._tally = Tally(self.plan)
        #: state machine: node visits this run has made (counted on from the store on a resume)
        self._visits = 0
        if self.supervisor is not None:
            self.services = replace(self.services, human_task_waiting=self._human_task_waiting)
        self._exits: dict[str, list[PlanEdge]] = {}
        for edge in self.plan.edges:
            self._exits.setdefault(edge.source, []).append(edge)
        for edges in self._exits.values():
            edges.sort(key=lambda e: e.order)

    # ------------------------------------------------------------------ entry point
    async def run(self) -> Outcome:
        try:
            if self.plan.control == "state_machine":
                return await self._run_state_machine()
            return await self._run_dag()
        except RunCancelled as exc:
            return Outcome("cancelled", None, self.context, str(exc) or "cancelled")
        except NodeFailed as exc:
            return Outcome("failed", None, self.context, str(exc), error_kind(exc))

    def _check_cancel(self) -> None:
        if self.recorder.cancel_requested():
            raise RunCancelled("cancelled by request")

    # ------------------------------------------------------------------ state machine
    def _resume_point(self) -> tuple[str, str | None]:
        """Where a (re)started run continues (:func:`resume_node`); and, for a supervised run
        whose last visit completed with nowhere to go, why it could not route."""
        node_id, unrouted = resume_node(self.recorder.past_visits())
        if node_id is None:
            return self.plan.initial, None  # type: ignore[return-value]
        if unrouted and self.supervisor is not None and self.plan.nodes[node_id].type != "final":
            return node_id, "no transition matched (before the run was resumed)"
        return node_id, None

    async def _run_state_machine(self) -> Outcome:
        node_id, unrouted = self._resume_point()
        self._visits = sum(1 for v in self.recorder.past_visits()
                           if v.parent_visit_id is None and getattr(self.plan.nodes.get(v.node_id), "type", "final") != "final")
        if self.supervisor is not None:
            resumed = bool(self.recorder.past_visits())
            await self._supervise(ProcessEvent("run_started", None if not resumed else node_id,
                                               detail={"resumed": resumed, "next": node_id}))
        while True:
            self._check_cancel()
            node = self.plan.nodes[node_id]
            if unrouted is not None:
                node_id, unrouted = await self._when_unrouted(node, unrouted)
                continue
            if node.type == "final":
                self._final_visit(node)
                return Outcome("completed", node.id, self.context)
            self._count_visit(node)
            if self.supervisor is not None:
                step = await self._supervise(self._event("node_entered", node))
                if step.name == "skip_node":
                    node_id, unrouted = self._skip(node, "skipped by the supervisor")
                    continue
            try:
                target = await self._visit(node)
            except NodeFailed as exc:
                if self.supervisor is None:
                    raise
                node_id, unrouted = await self._when_failed(node, exc)
                continue
            except RunCancelled:
                raise
            except Exception as exc:  # a tool's own error, after its retries
                failed = NodeFailed(f"node `{node.id}` failed: {_error_text(exc)}")
                if self.supervisor is None:
                    raise failed from exc
                node_id, unrouted = await self._when_failed(node, failed)
                continue
            if node.id in self._unrouted:
                unrouted = self._unrouted.pop(node.id)
                continue
            if self.supervisor is not None:
                target = await self._when_completed(node, target)
            node_id = target  # type: ignore[assignment]

    def _count_visit(self, node: PlanNode) -> None:
        """Count the visit the state machine is about to make of ``node``; past the run's bound,
        fail it (see the module docstring) before the node runs or a supervisor is asked."""
        limit = (self.plan.metadata or {}).get("max_visits")
        if not isinstance(limit, int) or isinstance(limit, bool):
            limit = RunLimits.model_fields["max_visits"].default
        if self._visits >= limit:
            raise LimitReached(f"the run would make a {ordinal(self._visits + 1)} node visit (node `{node.id}`); "
                               f"metadata.max_visits is {limit}: raise it if the process is meant to loop that long")
        self._visits += 1

    # ------------------------------------------------------------------ supervised runs
    def _event(self, kind: str, node: PlanNode, **detail: Any) -> ProcessEvent:
        return ProcessEvent(kind, node.id, exits_of(self._exits.get(node.id, [])), detail)  # type: ignore[arg-type]

    def _history(self) -> list[dict[str, Any]]:
        return [{"node": v.node_id, "status": v.status, "next": v.next_node}
                for v in self.recorder.past_visits() if v.parent_visit_id is None][-10:]

    async def _supervise(self, event: ProcessEvent) -> Command:
        """Ask the supervisor about ``event`` until it gives a command that passes (or
        :data:`MAX_ROUNDS` turns went by); ``set_context`` commands apply as they come."""
        assert self.supervisor is not None
        async with self._supervising:
            return await self._supervise_turns(event)

    async def _supervise_turns(self, event: ProcessEvent) -> Command:
        assert self.supervisor is not None
        visited = {v.node_id for v in self.recorder.past_visits()} | set(self._visited)
        before = self.context  # what a command past a bound leaves the run with
        for _ in range(MAX_ROUNDS):
            commands = await self.supervisor.decide(event, self.context, self._history())
            verdicts: list[Verdict] = []
            decision: Command | None = None
            for command in commands:
                if decision is not None:
                    reason: str | None = f"one decision per step: `{decision.name}` was taken"
                else:
                    reason = check(command, event, plan=self.plan, context=self.context, visited=visited)
                over = self._tally.take(command, event) if reason is None else None
                verdict = Verdict(command, reason is None and over is None, reason or over)
                verdicts.append(verdict)
                self.recorder.record_verdict(event, verdict)
                if over is not None:
                    self._undo_supervisor_context(before)
                    raise LimitReached(over, kind="model")
                if reason is not None:
                    continue
                if command.name == "set_context":
                    self._supervisor_context(command.args["updates"])
                else:
                    decision = command
            self.supervisor.told(verdicts)
            if decision is not None:
                if decision.name == "fail_process":
                    raise NodeFailed(f"failed by the supervisor: {decision.args['reason']}")
                return decision
            if all(v.accepted for v in verdicts):
                break  # nothing refused: the supervisor lets the run go on
        return Command("continue_process")

    async def _human_task_waiting(self, node_id: str, detail: dict[str, Any]) -> None:
        """Told only: the person's answer decides (every command but continue_process is refused)."""
        await self._supervise(ProcessEvent("human_task_waiting", node_id,
                                           exits_of(self._exits.get(node_id, [])), detail))

    def _supervisor_context(self, updates: dict[str, Any]) -> None:
        new = apply_update(self.context, updates, writes=list(updates), schema=self.plan.context_schema,
                           node_id="set_context")
        self.recorder.set_context(new)
        self.context = new

    def _undo_supervisor_context(self, before: dict[str, Any]) -> None:
        """Take back the ``set_context`` commands given about the event that went past a bound:
        the failed run keeps the context of its last completed node."""
        if self.context is not before:
            self.recorder.set_context(before)
            self.context = before

    def _skip(self, node: PlanNode, reason: str) -> tuple[str, str | None]:
        """Record ``node`` skipped and route on from it over the context as it is."""
        try:
            target = next_node(node, self._exits.get(node.id, []), self.context, None,
                               run_artifact_keys(self.services.run_id))
        except NoTransition as exc:
            self.recorder.skip_visit(node=node, reason=reason)
            return node.id, str(exc)
        self.recorder.skip_visit(node=node, reason=reason, next_node=target)
        self.listener("skipped", node.id, {"next": target})
        return target, None  # type: ignore[return-value]

    async def _when_completed(self, node: PlanNode, target: str | None) -> str | None:
        step = await self._supervise(self._event("node_completed", node, next=target))
        if step.name == "transition_to":
            if self._last_visit is not None:
                self.recorder.reroute(self._last_visit, step.args["node"])
            return str(step.args["node"])
        if step.name == "retry_node":
            return str(step.args.get("node") or node.id)
        return target

    async def _when_unrouted(self, node: PlanNode, error: str) -> tuple[str, str | None]:
        """A supervised run's node completed and no transition matched: ask the supervisor."""
        step = await self._supervise(self._event("no_transition", node, error=error))
        if step.name == "transition_to":
            if self._last_visit is not None:
                self.recorder.reroute(self._last_visit, step.args["node"])
            return str(step.args["node"]), None
        if step.name == "retry_node":
            return str(step.args.get("node") or node.id), None
        try:  # the supervisor may have repaired the context: route again over it
            target = next_node(node, self._exits.get(node.id, []), self.context, None,
                               run_artifact_keys(self.services.run_id))
        except NoTransition:
            raise NodeFailed(error, kind="definition") from None
        if self._last_visit is not None:
            self.recorder.reroute(self._last_visit, target)
        return target, None  # type: ignore[return-value]

    async def _when_failed(self, node: PlanNode, exc: NodeFailed) -> tuple[str, str | None]:
        """A supervised run's node failed (after its retries): ask the supervisor before failing."""
        step = await self._supervise(self._event("node_failed", node, error=str(exc), error_kind=error_kind(exc)))
        if step.name == "retry_node":
            return str(step.args.get("node") or node.id), None
        if step.name == "transition_to":
            return str(step.args["node"]), None
        if step.name == "skip_node":
            return self._skip(node, "skipped by the supervisor after it failed")
        raise exc

    def _final_visit(self, node: PlanNode) -> None:
        past = self.recorder.past_visits()
        if past and past[-1].node_id == node.id and past[-1].status == "completed":
            return  # resumed after the final visit was written
        vid = self.recorder.start_visit(node=node, attempt=1, input=None)
        self.recorder.finish_visit(vid, status="completed", old_context=self.context, new_context=self.context)
        self.listener("completed", node.id, {"final": True})

    # ------------------------------------------------------------------ one visit of any node
    async def _visit(self, node: PlanNode) -> str | None:
        """Run a node (leaf, condition, foreach or branch); returns the next node (state machine)."""
        if node.type == "foreach":
            return await self._fanout(node, self._foreach_items(node))
        if node.type == "branch":
            return await self._fanout(node, self._branch_items(node))
        return await self.executor.visit(node, node.id, lambda attempt: self._leaf_attempt(node, attempt))

    async def _leaf_attempt(self, node: PlanNode, attempt: int) -> str | None:
        started = time.perf_counter()
        vid = self.recorder.start_visit(node=node, attempt=attempt, input=None)
        self.listener("started", node.id, {"attempt": attempt})
        try:
            try:
                effect = self._held_effect(node)
                if effect is None:
                    effect = await leaf_effect(node, self.context, self.services, vid)
                effect = await self._user_choice(node, vid, effect)
            except Advanced as advanced:  # an admin advanced the run past the person it asked
                effect = Effect(output={"advanced": advanced.target, "note": str(advanced)}, route_to=advanced.target)
            return self._complete(node, vid, effect, started)
        except BaseException as exc:
            self._fail(node, vid, exc)
            raise

    async def _user_choice(self, node: PlanNode, vid: str, effect: Effect) -> Effect:
        """A node with `trigger: user` exits: a person picks the exit, over the context as the
        effect leaves it (see :mod:`flows.runtime.routing`); the effect then routes there."""
        if not node.user_choice or effect.route_to is not None or self.plan.control != "state_machine":
            return effect
        preview = apply_update(self.context, effect.update, writes=node.writes, schema=self.plan.context_schema,
                               node_id=node.id)
        self._held[vid] = effect  # until the person answers: _fail records it when the run suspends
        chosen = await ask_user_exit(node, self._exits.get(node.id, []), preview, self.services, vid,
                                     run_artifact_keys(self.services.run_id))
        del self._held[vid]
        return effect if chosen is None else replace(effect, route_to=chosen)

    def _held_effect(self, node: PlanNode) -> Effect | None:
        """The effect a suspended visit of this node had computed before it asked a person.

        A run that suspends while a person picks a ``trigger: user`` exit ends its process; the
        resumed flow body re-enters the node. Its work (a tool call, a model answer) is done and
        was recorded as the paused visit's output (see :meth:`_fail`), so it is taken from there
        rather than done twice."""
        if not node.user_choice:
            return None
        top = [v for v in self.recorder.past_visits() if v.parent_visit_id is None]
        if not top or top[-1].node_id != node.id or top[-1].status != "paused":
            return None
        held = top[-1].output.get(_HELD) if isinstance(top[-1].output, dict) else None
        if not isinstance(held, dict):
            return None
        return Effect(update=dict(held.get("update") or {}), output=held.get("output"), child_run_id=held.get("child_run_id"))

    def _complete(self, node: PlanNode, vid: str, effect: Effect, started: float) -> str | None:
        """Validate and apply the effect, route, checkpoint — synchronously, so no other visit
        of this run can interleave between applying and writing."""
        old = self.context
        # a secret a model echoed or a tool returned never enters the context (nor later prompts)
        effect = replace(effect, update=redact(effect.update), output=redact(effect.output))
        new = apply_update(old, effect.update, writes=node.writes, schema=self.plan.context_schema, node_id=node.id)
        target: str | None
        if effect.route_to is not None:
            target = effect.route_to
        elif self.plan.control == "state_machine":
            try:
                target = next_node(node, self._exits.get(node.id, []), new, effect.output,
                                   run_artifact_keys(self.services.run_id))
            except NoTransition as exc:
                if self.supervisor is None:
                    raise
                # supervised: the visit's work stands; where it goes is asked of the supervisor
                self._unrouted[node.id] = str(exc)
                target = None
        else:
            target = None
        self.recorder.finish_visit(vid, status="completed", output=_jsonable(effect.output), next_node=target,
                                   old_context=old, new_context=new, child_run_id=effect.child_run_id,
                                   input=_jsonable(effect.input), submission=effect.submission)
        self.context = new
        self._last_visit = vid
        self._visited.add(node.id)
        self.listener("completed", node.id, {"ms": round((time.perf_counter() - started) * 1000, 1), "next": target})
        return target

    def _fail(self, node: PlanNode, vid: str, exc: BaseException) -> None:
        status = "cancelled" if isinstance(exc, (asyncio.CancelledError, RunCancelled)) else "failed"
        status = getattr(exc, "visit_status", status)  # e.g. a run suspended for a person: `paused`
        held = self._held.pop(vid, None)
        output = None if held is None or status != "paused" else {
            _HELD: {"update": _jsonable(held.update), "output": _jsonable(held.output), "child_run_id": held.child_run_id}}
        self.recorder.finish_visit(vid, status=status, output=output, error=_error_text(exc),
                                   error_kind=error_kind(exc) if status == "failed" else None,
                                   input=_failed_input(exc))
        self.listener(status, node.id, {"error": _error_text(exc)})

    # ------------------------------------------------------------------ foreach / branch
    def _foreach_items(self, node: PlanNode) -> list[tuple[str, Any, dict[str, Any], PlanNode]]:
        body = node.body_as(ForeachNode)
        try:
            items = get_path(self.context, body.foreach)
        except KeyError as exc:
            raise NodeFailed(f"foreach `{node.id}`: {exc.args[0]}", kind="definition") from None
        if not isinstance(items, list):
            raise NodeFailed(f"foreach `{node.id}`: `{body.foreach}` is {type(items).__name__}, not a list",
                             kind="definition")
        limit = FOREACH_MAX_ITEMS[body.task_runs]
        if len(items) > limit:
            more = "" if body.task_runs == "node" else \
                f" (`task_runs: node` runs up to {FOREACH_MAX_ITEMS['node']:,})"
            raise NodeFailed(f"foreach `{node.id}`: {len(items)} items, over the limit of {limit:,}{more}",
                             kind="world")
        name = body.as_
        child = node.children["node"]
        out = []
        for index, item in enumerate(items):
            scope = {**self.context, name: item}
            key = render(body.item_id, scope) if body.item_id else str(index)
            out.append((key, item, scope, child))
        return out

    def _branch_items(self, node: PlanNode) -> list[tuple[str, Any, dict[str, Any], PlanNode]]:
        return [(arm.id, arm.title, self.context, node.children[arm.id]) for arm in node.body_as(BranchNode).branches]

    async def _fanout(self, node: PlanNode, items: list[tuple[str, Any, dict[str, Any], PlanNode]]) -> str | None:
        """Run every item's leaf body (bounded window), join, collect, checkpoint the parent."""
        started = time.perf_counter()
        body = fanout_body(node)
        reused = self._reusable_fanout(node)
        if reused:  # the parent visit the run's earlier execution left unfinished, with its completed items
            parent_vid = reused[0]
            self.recorder.reopen_visit(parent_vid)
        else:
            parent_vid = self.recorder.start_visit(node=node, attempt=1, input={"items": len(items)})
        done_before: dict[str, Any] = reused[1] if reused else {}
        self.listener("started", node.id, {"items": len(items)})
        limit = (body.max_concurrency if isinstance(body, ForeachNode) else None) or len(items) or 1
        fail_fast = body.failure_policy == "fail_fast"
        # `task_runs: node`: the node is one task run of the executor and each item's attempts
        # run here, by its body's retry policy; else each item is a task run of its own
        per_node = isinstance(body, ForeachNode) and body.task_runs == "node"
        stop = asyncio.Event()
        results: list[dict[str, Any] | None] = [None] * len(items)
        progress = _FanoutProgress(self.listener, node.id, len(items))

        async def one(index: int, key: str, item: Any, scope: dict[str, Any], child: PlanNode) -> None:
            if key in done_before:
                results[index] = {"status": "completed", "effect": Effect(output=done_before[key]), "reused": True}
                progress.ended("completed")
                return
            if (results[index] or {}).get("status") == "completed":
                return  # done by an earlier attempt of the node's task run
            if stop.is_set():
                results[index] = {"status": "cancelled", "error": "not started: an earlier item failed"}
                return
            try:
                def attempt_fn(attempt: int) -> Awaitable[Effect]:
                    return self._item_attempt(node, child, scope, key, parent_vid, attempt)

                if per_node:  # the executor's way with delays: ergon test's has none
                    effect = await run_attempts(child.retry, attempt_fn,
                                                wait=getattr(self.executor, "waits_between_attempts", True))
                else:
                    effect = await self.executor.visit(child, f"{node.id}[{key}]", attempt_fn)
                results[index] = {"status": "completed", "effect": effect}
            except Exception as exc:  # noqa: BLE001 - recorded per item; policy decides
                results[index] = {"status": "failed", "error": _error_text(exc), "kind": error_kind(exc)}
                if fail_fast:
                    stop.set()
            progress.ended(results[index]["status"])  # type: ignore[index]

        async def worker(next_index: Iterator[int]) -> None:
            # The window is this many workers, each taking the next item when its last one ended:
            # 10,000 items are not 10,000 asyncio tasks queued on a semaphore (measured: ~10 µs of
            # CPU an item, all of a no-op item's share of the loop).
            mark_parallel()  # each worker is an asyncio task of its own (gather): the mark stays local
            for taken, index in enumerate(next_index, 1):
                await one(index, *items[index])
                if taken % YIELD_EVERY == 0:
                    await asyncio.sleep(0)  # items that never wait must not keep the loop from the rest

        async def every_item(attempt: int = 1) -> Effect:
            if attempt > 1:  # the node's task run again: its items that did not complete run again
                stop.clear()
                progress.again(sum(1 for r in results if (r or {}).get("status") == "completed"))
            next_index = iter(range(len(items)))  # shared: each worker's next() takes the next item
            await asyncio.gather(*(worker(next_index) for _ in range(min(limit, len(items)))))
            progress.tell()
            failures = [(items[i][0], r) for i, r in enumerate(results) if r and r["status"] == "failed"]
            if failures and fail_fast:
                key, res = failures[0]
                raise NodeFailed(f"{node.type} `{node.id}`: item `{key}` failed: {res['error']}", kind=res["kind"])
            return self._collect(node, items, results)

        try:
            effect = await (self.executor.visit(node, node.id, every_item) if per_node else every_item())
            effect = await self._user_choice(node, parent_vid, effect)
            return self._complete(node, parent_vid, effect, started)
        except BaseException as exc:
            self._fail(node, parent_vid, exc)
            raise

    def _reusable_fanout(self, node: PlanNode) -> tuple[str, dict[str, Any]] | None:
        """On resume: the unfinished parent visit of this fan-out and its completed items."""
        past = self.recorder.past_visits()
        parents = [v for v in past if v.node_id == node.id and v.parent_visit_id is None]
        if not parents or parents[-1].status == "completed":
            return None
        parent = parents[-1]
        done = {v.item_key: v.output for v in past
                if v.parent_visit_id == parent.id and v.status == "completed" and v.item_key is not None}
        return parent.id, done

    async def _item_attempt(self, parent: PlanNode, child: PlanNode, scope: dict[str, Any], key: str,
                            parent_vid: str, attempt: int) -> Effect:
        vid = self.recorder.start_visit(node=child, attempt=attempt, input=None, parent_visit_id=parent_vid, item_key=key)
        try:
            effect = await leaf_effect(child, scope, self.services, vid)
            self.recorder.finish_visit(vid, status="completed", output=_jsonable(self._item_output(child, effect)),
                                       child_run_id=effect.child_run_id, input=_jsonable(effect.input))
            return effect
        except BaseException as exc:
            self.recorder.finish_visit(vid, status="failed", error=_error_text(exc), error_kind=error_kind(exc),
                                       input=_failed_input(exc))
            raise

    @staticmethod
    def _item_output(child: PlanNode, effect: Effect) -> Any:
        """What an item contributes: its update when the body declares writes, else its raw output."""
        return effect.update if child.writes else effect.output

    def _collect(self, node: PlanNode, items: list, results: list[dict[str, Any] | None]) -> Effect:
        collect = fanout_body(node).collect
        target = collect if isinstance(collect, str) else collect.into if collect else None
        reaching = set(node.writes) - {target}
        if target is None and not reaching:  # nothing to gather: count the failures (a large fan-out's common case)
            failed = sum(1 for res in results if res is None or res["status"] != "completed")
            return Effect(update={}, output={"items": len(items), "failed": failed})
        is_branch = node.type == "branch"
        envelopes = []
        update: dict[str, Any] = {}
        for index, ((key, item, _scope, child), res) in enumerate(zip(items, results, strict=True)):
            res = res or {"status": "cancelled", "error": "not run"}
            effect: Effect | None = res.get("effect")
            output = None
            if effect is not None:
                output = effect.output if res.get("reused") else self._item_output(child, effect)
            env = {"status": res["status"], "index": index, "output": output, "error": res.get("error"),
                   "context_update": effect.update if effect else None,
                   "child_run_id": effect.child_run_id if effect else None}
            if is_branch:
                env.update({"branch_id": key, "branch_title": item})
            else:
                env.update({"item_id": key, "item": item})
            envelopes.append(env)
            if effect is not None and res["status"] == "completed":
                # A child's writes reach the context for the fields the fan-out node declares in
                # its own `writes`, applied in item order; the write-race pass refuses two
                # children that may run at once writing the same such field.
                child_update = (output or {}) if res.get("reused") and child.writes else effect.update
                update.update({k: v for k, v in child_update.items() if k in reaching})
        if isinstance(collect, str):
            update[collect] = [e["output"] for e in envelopes]
        elif isinstance(collect, CollectSpec):
            keep = collect.include or ["status", "index", "item_id", "output", "error"]
            update[collect.into] = [{k: e.get(k) for k in keep} for e in envelopes]
        failed = sum(1 for e in envelopes if e["status"] != "completed")
        return Effect(update=update, output={"items": len(envelopes), "failed": failed})

    # ------------------------------------------------------------------ DAG
    async def _run_dag(self) -> Outcome:
        nodes = self.plan.nodes
        state: dict[str, str] = {}
        for v in self.recorder.past_visits():
            if v.parent_visit_id is None and v.status in ("completed", "skipped"):
                state[v.node_id] = v.status
        running: dict[asyncio.Task, str] = {}
        failure: str | None = None
        failure_kind: ErrorKind | None = None
        # A visit that stops the run to wait for a person (a signal whose visit is recorded
        # `paused`, as a process's is) is no failure: nothing more starts, the nodes running end,
        # then the signal goes on up, so the run ends paused as a process does.
        pause: BaseException | None = None

        def ready(nid: str) -> bool:
            return nid not in state and all(state.get(n) in ("completed", "skipped") for n in nodes[nid].needs) and \
                nid not in running.values()

        while True:
            if failure is None and pause is None:
                self._check_cancel()
                for nid, node in nodes.items():
                    if not ready(nid):
                        continue
                    skipped_need = next((n for n in node.needs if state.get(n) == "skipped"), None)
                    if skipped_need and node.skip_propagates:
                        state[nid] = "skipped"
                        self.recorder.skip_visit(node=node, reason=f"`{skipped_need}` was skipped")
                        self.listener("skipped", nid, {})
                        continue
                    if not self._when_passes(node):
                        state[nid] = "skipped"
                        self.recorder.skip_visit(node=node, reason=WHEN_FALSE)
                        self.listener("skipped", nid, {})
                        continue
                    running[asyncio.ensure_future(self._parallel_visit(node))] = nid
                if any(ready(n) for n in nodes):
                    continue  # skips can unlock more nodes without any task finishing
            if not running:
                break
            finished, _ = await asyncio.wait(list(running), return_when=asyncio.FIRST_COMPLETED)
            for task in finished:
                nid = running.pop(task)
                exc = task.exception()
                if exc is None:
                    state[nid] = "completed"
                elif getattr(exc, "visit_status", None) == "paused" and not isinstance(exc, Exception):
                    state[nid] = "paused"
                    pause = pause or exc
                else:
                    state[nid] = "failed"
                    if failure is None:
                        failure, failure_kind = f"node `{nid}` failed: {_error_text(exc)}", error_kind(exc)
        if failure:
            for nid, node in nodes.items():
                if nid not in state:
                    self.recorder.skip_visit(node=node, reason="not run: an upstream node failed", status="failed")
            return Outcome("failed", None, self.context, failure, failure_kind)
        if pause is not None:
            raise pause
        return Outcome("completed", "completed", self.context)

    async def _parallel_visit(self, node: PlanNode) -> str | None:
        """A DAG node's visit: it may overlap others (see :mod:`flows.runtime.parallel`)."""
        mark_parallel()
        return await self._visit(node)

    def _when_passes(self, node: PlanNode) -> bool:
        if node.when is not None and not evaluate(node.when, self.context, run_artifact_keys(self.services.run_id)):
            return False
        for cond in node.extras.get("when_regexp", []) or []:
            try:
                value = get_path(self.context, cond["var"])
            except KeyError:
                return False
            if not re.search(cond["pattern"], str(value)):
                return False
        return True


def resume_node(visits: Iterable[Any]) -> tuple[str | None, bool]:
    """Where a state machine continues after ``visits`` (its visits in order, any objects with
    ``node_id``, ``status``, ``next_node``, ``parent_visit_id``): the next node of the last
    top-level visit that completed or was skipped towards one, else the node of the last one that
    did not finish (it is redone); None before any visit. The flag says the last visit completed
    with no next node (a final node, or a supervised run's node nothing routed from). Resuming
    runs and the operator controls' *current node* (:mod:`flows.runs.controls`) both ask this."""
    top = [v for v in visits if v.parent_visit_id is None]
    for visit in reversed(top):
        if visit.status in ("completed", "skipped") and visit.next_node:
            return visit.next_node, False
        if visit.status == "completed":
            return visit.node_id, True
        if visit.status in ("failed", "running", "cancelled", "paused"):
            return visit.node_id, False  # redo the node that did not finish
    return None, False


def _error_text(exc: BaseException) -> str:
    if isinstance(exc, asyncio.CancelledError):  # the process is being stopped, or gave up its orchestrator
        return f"interrupted: {exc}" if str(exc) else "interrupted: the process was stopped"
    text = str(exc) or type(exc).__name__
    return text if isinstance(exc, NodeFailed) else f"{type(exc).__name__}: {text}"


def _failed_input(exc: BaseException) -> Any:
    """What a failed body received, when it said (:func:`flows.runtime.errors.with_visit_input`)."""
    return _jsonable(getattr(exc, "visit_input", None))


#: values that are JSON as they are, without a look inside
_JSON_SCALARS = (str, int, float, bool, type(None))


def _jsonable(value: Any) -> Any:
    """Outputs go to JSON columns: keep JSON types, stringify the rest."""
    if type(value) in _JSON_SCALARS or (type(value) in (dict, list) and not value):
        return value  # most items of a large fan-out: no need to encode them to know
    try:
        json.dumps(value)
        return value
    except (TypeError, ValueError):
        return json.loads(json.dumps(value, default=str))
