"""Supervised runs, the engine's side: the events a supervisor hears, the commands it may give,
and the rules every command is checked against before the engine applies it.

A run is *programmatic* (the default: the engine alone walks the definition) or *supervised*: a
:class:`Supervisor` — an LLM conversation, :mod:`flows.llm.supervisor` — hears a
:class:`ProcessEvent` at each step of a state machine and answers with :class:`Command` s, the
process-control tools only it ever gets. The engine stays the owner of state and routing: it
checks each command with :func:`check` and applies only those that pass; a refused command is
answered to the supervisor with the reason, recorded, and the supervisor asked again (at most
:data:`MAX_ROUNDS` turns per event; then the run goes on as if it had said ``continue_process``).
Worker nodes (agents included) never know whether their run is supervised.

The events, and what a supervisor may answer to each (``continue_process`` always: the engine
then does what a programmatic run does — after a failure or an unroutable node, that is to fail):

====================== =======================================================================
``run_started``        ``set_context``, ``fail_process`` (also on a resume, ``resumed: true``)
``node_entered``       ``set_context``, ``skip_node``, ``fail_process``
``node_completed``     ``set_context``, ``transition_to`` (instead of the route the engine took),
                       ``retry_node``, ``fail_process``
``no_transition``      ``set_context`` (the routing is tried again over the new context),
                       ``transition_to``, ``retry_node``, ``fail_process``
``node_failed``        ``set_context``, ``retry_node``, ``transition_to``, ``skip_node``,
                       ``fail_process``
``human_task_waiting`` nothing else: a person is being asked, their answer decides
====================== =======================================================================

The rules (:func:`check`):

* ``set_context{updates}`` — never a field starting with ``_``; the merged context must be valid
  against ``context.schema`` and within the 64 KB cap (:func:`flows.runtime.context.apply_update`).
  Several ``set_context`` commands in one answer apply in order; the others decide the step.
* ``transition_to{node}`` — a declared exit of the current node (a transition or branch target),
  unless the policy has ``allow_transition_override`` (then any node of the definition).
* ``skip_node`` — only where the node is ``skippable: true`` or the policy has ``allow_skip``;
  the node is recorded ``skipped`` and the run routes on over the context as it is.
* ``retry_node{node?}`` — re-enter the current node, or another that is a declared exit, was
  visited earlier in this run, or any node under ``allow_transition_override``.
* ``fail_process{reason}`` — the run fails with the reason.

The policy is ``metadata.supervisor`` of the definition, overridden key by key by the node's own
``metadata.supervisor`` (node level wins). The checker refuses ``allow_skip: true`` on a node that
is not ``skippable`` (authoring rule 13): at node level, ``allow_skip`` can only take away a
definition-wide allowance.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from compiler.plan import Plan, PlanEdge, PlanNode
from flows.runtime.context import apply_update
from flows.runtime.errors import ContextTooLarge, WriteRejected

EventKind = Literal["run_started", "node_entered", "node_completed", "no_transition", "node_failed",
                    "human_task_waiting"]
CommandName = Literal["continue_process", "set_context", "transition_to", "skip_node", "retry_node", "fail_process"]
COMMANDS: tuple[str, ...] = ("continue_process", "set_context", "transition_to", "skip_node", "retry_node",
                             "fail_process")
#: what may answer each event besides ``continue_process`` (see the module docstring)
ALLOWED: dict[str, frozenset[str]] = {
    "run_started": frozenset({"set_context", "fail_process"}),
    "node_entered": frozenset({"set_context", "skip_node", "fail_process"}),
    "node_completed": frozenset({"set_context", "transition_to", "retry_node", "fail_process"}),
    "no_transition": frozenset({"set_context", "transition_to", "retry_node", "fail_process"}),
    "node_failed": frozenset({"set_context", "retry_node", "transition_to", "skip_node", "fail_process"}),
    "human_task_waiting": frozenset(),
}
#: turns of the conversation per event when the supervisor's commands are refused
MAX_ROUNDS = 3
#: the keys ``metadata.supervisor`` may hold (the checker refuses others)
POLICY_KEYS = ("allow_transition_override", "allow_skip", "model")


@dataclass(frozen=True)
class ProcessEvent:
    """What happened, as the supervisor is told it."""

    kind: EventKind
    node_id: str | None
    #: the declared exits of the current node: [{to, kind, trigger, when, label}]
    exits: list[dict[str, Any]] = field(default_factory=list)
    #: error text (node_failed, no_transition), the route taken (node_completed: ``next``), ...
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Command:
    """One process-control tool call of the supervisor."""

    name: str
    args: dict[str, Any] = field(default_factory=dict)
    #: the tool call's id in the conversation (its result is answered under it)
    call_id: str | None = None


@dataclass(frozen=True)
class Verdict:
    """A command and what the engine made of it."""

    command: Command
    accepted: bool
    reason: str | None = None


class Supervisor(Protocol):
    """The conversation that watches a supervised run (implemented by :mod:`flows.llm.supervisor`)."""

    async def decide(self, event: ProcessEvent, context: dict[str, Any], history: list[dict[str, Any]]) -> list[Command]:
        """Tell the supervisor of ``event``; its commands (none: ``continue_process``)."""
        ...

    def told(self, verdicts: list[Verdict]) -> None:
        """What became of its commands (answered to it as the tool calls' results)."""
        ...


def policy(plan: Plan, node: PlanNode | None) -> dict[str, Any]:
    """The supervisor policy at ``node``: the definition's, overridden by the node's, key by key."""
    merged = dict((plan.metadata or {}).get("supervisor") or {})
    meta = getattr(node.body, "metadata", None) if node is not None else None
    own = getattr(meta, "supervisor", None) if meta is not None else None
    merged.update(own or {})
    return merged


def exits_of(edges: list[PlanEdge]) -> list[dict[str, Any]]:
    """A node's exits as the supervisor sees them."""
    return [{"to": e.target, "kind": e.kind, "trigger": e.trigger, "when": e.guard, "label": e.label}
            for e in edges]


def skippable(plan: Plan, node: PlanNode) -> bool:
    return bool(getattr(node.body, "skippable", False)) or policy(plan, node).get("allow_skip") is True


def check(command: Command, event: ProcessEvent, *, plan: Plan, context: dict[str, Any],
          visited: set[str]) -> str | None:
    """Why ``command`` is refused as an answer to ``event``; None when it may be applied."""
    name = command.name
    if name not in COMMANDS:
        return f"`{name}` is not a process-control command; use one of {', '.join(COMMANDS)}"
    if name == "continue_process":
        return None
    if name not in ALLOWED[event.kind]:
        if event.kind == "human_task_waiting":
            return "a person is being asked: their answer decides; only `continue_process` is taken now"
        can = ", ".join(sorted(ALLOWED[event.kind] | {"continue_process"}))
        return f"`{name}` cannot answer `{event.kind}`; here: {can}"
    node = plan.nodes.get(event.node_id) if event.node_id else None
    rules = policy(plan, node)
    declared = [e["to"] for e in event.exits]
    if name == "set_context":
        return set_context_problem(command.args.get("updates"), plan=plan, context=context)
    if name == "transition_to":
        target = command.args.get("node")
        if target not in plan.nodes:
            return f"no node {target!r} in `{plan.name}`"
        if target not in declared and rules.get("allow_transition_override") is not True:
            return (f"`{target}` is not a declared exit of `{event.node_id}` (exits: {', '.join(declared) or 'none'}); "
                    "`metadata.supervisor.allow_transition_override` would allow it")
        return None
    if name == "skip_node":
        assert node is not None  # node_entered / node_failed always name the node
        if not skippable(plan, node):
            return (f"`{node.id}` is not skippable: it needs `skippable: true`, or "
                    "`metadata.supervisor.allow_skip` on the definition")
        return None
    if name == "retry_node":
        target = command.args.get("node") or event.node_id
        if target not in plan.nodes:
            return f"no node {target!r} in `{plan.name}`"
        if plan.nodes[target].type == "final":
            return f"`{target}` is a final node: use `transition_to` to end there"
        if target == event.node_id or target in visited or target in declared \
                or rules.get("allow_transition_override") is True:
            return None
        return (f"`{target}` is neither the current node, one visited before, nor a declared exit of "
                f"`{event.node_id}`; `metadata.supervisor.allow_transition_override` would allow it")
    if name == "fail_process":
        reason = command.args.get("reason")
        return None if isinstance(reason, str) and reason.strip() else "`fail_process` needs a `reason`"
    return None  # pragma: no cover - every command is handled above


def set_context_problem(updates: Any, *, plan: Plan, context: dict[str, Any]) -> str | None:
    """Why ``updates`` may not be merged into ``context`` (by a supervisor or an operator)."""
    if not isinstance(updates, dict) or not updates:
        return "`set_context` needs `updates`: an object of context fields and their values"
    internal = sorted(k for k in updates if str(k).startswith("_"))
    if internal:
        return f"internal fields cannot be written: {', '.join(internal)}"
    try:
        apply_update(context, updates, writes=list(updates), schema=plan.context_schema, node_id="set_context")
    except (WriteRejected, ContextTooLarge) as exc:
        return str(exc).replace("node `set_context` ", "the update ")
    return None
