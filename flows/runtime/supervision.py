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

A supervisor is also bounded in how much it may steer one run (:class:`Tally`), so that a faulty
or manipulated model cannot keep a run — and its model bill — going for ever by sending it back
again and again. Past a bound the run fails (error kind ``model``) with a message that names the
bound and the key that raises it; nothing of the answer that went past it is applied. The bounds
(:class:`compiler.ir.SupervisorPolicy`):

==================== ======= =================================================================
``max_node_retries`` 3       accepted ``retry_node`` commands into one node (the retried node's
                             own policy may say otherwise)
``max_transitions``  20      accepted ``transition_to`` commands
``max_commands``     100     accepted commands of any kind but ``continue_process`` and
                             ``fail_process``
==================== ======= =================================================================

The counts belong to one execution of the run, as the conversation does: a run resumed in a new
process starts them afresh. What bounds a run however often it resumes is its number of node
visits (``metadata.max_visits``, counted from the store by the engine).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from compiler.ir import SupervisorPolicy
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
POLICY_KEYS = tuple(SupervisorPolicy.model_fields)


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
    merged.update(_own_policy(node))
    return merged


def _own_policy(node: PlanNode | None) -> dict[str, Any]:
    """The node's own ``metadata.supervisor``."""
    meta = getattr(node.body, "metadata", None) if node is not None else None
    return dict(getattr(meta, "supervisor", None) or {}) if meta is not None else {}


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


def bound(plan: Plan, node: PlanNode | None, key: str) -> int:
    """The supervisor bound ``key`` at ``node`` (None: the definition's), else its default."""
    value = policy(plan, node).get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else SupervisorPolicy.model_fields[key].default


class Tally:
    """What one run's supervisor has had applied so far, against the policy's bounds (see the
    module docstring)."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.retries: Counter[str] = Counter()
        self.transitions = 0
        self.commands = 0

    def take(self, command: Command, event: ProcessEvent) -> str | None:
        """Count ``command``, which :func:`check` accepted as an answer to ``event``: why it goes
        past a bound (and must not be applied), None while within them. A command past a bound is
        not counted: the run fails with it."""
        name = command.name
        if name in ("continue_process", "fail_process"):
            return None
        limit = bound(self.plan, None, "max_commands")
        if self.commands + 1 > limit:
            return (f"the supervisor gave a {ordinal(self.commands + 1)} command (`{name}`) in this run; "
                    f"metadata.supervisor.max_commands is {limit}")
        if name == "retry_node":
            target = str(command.args.get("node") or event.node_id)
            node = self.plan.nodes.get(target)
            limit = bound(self.plan, node, "max_node_retries")
            if self.retries[target] + 1 > limit:
                key = f"nodes.{target}.metadata.supervisor" if "max_node_retries" in _own_policy(node) \
                    else "metadata.supervisor"
                return (f"the supervisor asked to retry node `{target}` a {ordinal(self.retries[target] + 1)} time; "
                        f"{key}.max_node_retries is {limit}")
            self.retries[target] += 1
        if name == "transition_to":
            limit = bound(self.plan, None, "max_transitions")
            if self.transitions + 1 > limit:
                return (f"the supervisor asked for a {ordinal(self.transitions + 1)} transition "
                        f"(to `{command.args.get('node')}`) in this run; metadata.supervisor.max_transitions is {limit}")
            self.transitions += 1
        self.commands += 1
        return None


def ordinal(n: int) -> str:
    """``1st``, ``2nd``, ``3rd``, ``4th``, ``11th``, ``21st``: how the bounds' messages count."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"
