"""Picking the next node of a state machine after a visit.

The rules of the seed's process model, in order:

* a ``condition`` node takes the first branch whose ``when`` passes, else its ``default`` branch;
* an ``agent`` node with agent-triggered transitions takes ``_next_node`` from its result (which
  must name one of them), or the only one there is;
* a node with ``trigger: user`` transitions ("driven by a human signal") ends by asking a person
  (:func:`ask_user_exit`, below) when at least one of them is open;
* otherwise the first ``auto`` transition whose guard passes (no guard = always) wins — ``user``
  transitions are never taken automatically;
* nothing passing is an error that names the node and every guard that was tried.

A guard using ``artifact_exists`` asks ``artifacts`` for the run's artifact keys (see
:func:`run_artifact_keys`); other guards never touch the store.

Choosing a ``trigger: user`` exit. The compiler marks such nodes ``user_choice`` (and ``halt``)
in the Plan. After the node's body has produced its effect, the engine applies the update to a
copy of the context and asks: a human task, created and awaited through the human-task body's
:func:`~flows.runtime.bodies.human_task.ask_person` (same pause, subflow or suspension, same
validation, same CLI, dashboard and Prefect resume form), whose only field is a required select
``_next_node`` over the user exits **whose guard passes at that moment** (each option labelled
with the transition's ``label``, else its target id). A guard therefore still applies: a closed
exit is not offered, and an answer naming it is refused like any value outside a select's
options (the run stays paused). The task is titled after the node (``title``, else its id),
described by its ``human_description`` (else ``description``), both rendered over the context,
and assigned to the node's ``assignee``, else the person who started the run. When no user exit
is open the ``auto`` transitions route as usual. The visit is checkpointed only once the answer
is in, with the chosen target as its ``next_node``; a run that suspends while asking (under a
deployment) re-enters the visit and runs the node's body again before finding the same task.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

from compiler.guards import evaluate
from compiler.plan import PlanEdge, PlanNode
from compiler.templates import render
from flows.runtime.effects import Services
from flows.runtime.errors import NodeFailed, NoTransition
from flows.store.artifacts import artifacts_for_run

ArtifactKeys = Callable[[], Iterable[str]]


def run_artifact_keys(run_id: str | None) -> ArtifactKeys:
    """The keys of a run's artifacts, read from the store when a guard first asks."""
    def keys() -> list[str]:
        return sorted({a.key for a in artifacts_for_run(run_id)}) if run_id else []
    return keys


#: The field of the task that picks a `trigger: user` exit (the same name an agent's choice uses).
CHOICE_FIELD = "_next_node"


def _guard_text(guard: Any) -> str:
    return "always" if guard is None else json.dumps(guard, separators=(",", ":"))


def next_node(node: PlanNode, exits: list[PlanEdge], context: dict[str, Any], output: Any,
              artifacts: ArtifactKeys | None = None) -> str | None:
    """The id of the next node, or None after a final node."""
    if node.type == "final":
        return None
    if node.type == "condition":
        default = None
        for edge in exits:
            if edge.kind == "default":
                default = default or edge.target
            elif edge.kind == "branch" and evaluate(edge.guard, context, artifacts):
                return edge.target
        if default:
            return default
        raise NoTransition(f"no branch of condition `{node.id}` matched and it has no default")
    transitions = [e for e in exits if e.kind == "transition"]
    agent_exits = [e for e in transitions if e.trigger == "agent"]
    if node.type == "agent" and agent_exits:
        chosen = output.get("_next_node") if isinstance(output, dict) else None
        targets = [e.target for e in agent_exits]
        if chosen is not None:
            if chosen not in targets:
                raise NodeFailed(f"agent `{node.id}` chose `_next_node` = {chosen!r}, not one of {targets}")
            return chosen
        if len(agent_exits) == 1:
            return agent_exits[0].target
        raise NodeFailed(f"agent `{node.id}` returned no `_next_node` and has {len(targets)} agent transitions")
    for edge in transitions:
        if edge.trigger != "auto":
            continue
        if edge.guard is None or evaluate(edge.guard, context, artifacts):
            return edge.target
    tried = "; ".join(f"→ {e.target} when {_guard_text(e.guard)}" for e in transitions) or "no transitions"
    raise NoTransition(f"no transition matched after `{node.id}` (tried: {tried})")


def open_user_exits(exits: list[PlanEdge], context: dict[str, Any],
                    artifacts: ArtifactKeys | None = None) -> list[PlanEdge]:
    """The ``trigger: user`` transitions a person may pick now: those whose guard passes."""
    return [e for e in exits if e.kind == "transition" and e.trigger == "user"
            and (e.guard is None or evaluate(e.guard, context, artifacts))]


def choice_field(options: list[PlanEdge]) -> dict[str, Any]:
    """The task field that picks one of ``options``: a required select, labelled per transition."""
    targets = list(dict.fromkeys(e.target for e in options))
    labels = {e.target: e.label or e.target for e in reversed(options)}  # the first transition's label wins
    return {"name": CHOICE_FIELD, "type": "select", "required": True, "options": targets,
            "label": "Next step", "option_labels": {t: labels[t] for t in targets}}


async def ask_user_exit(node: PlanNode, exits: list[PlanEdge], context: dict[str, Any], services: Services,
                        visit_id: str | None, artifacts: ArtifactKeys | None = None) -> str | None:
    """Ask a person which open ``trigger: user`` exit the run takes (see the module docstring);
    None when none is open (the ``auto`` transitions route then)."""
    from flows.runtime.bodies.human_task import ask_person, fields_about  # bodies import the engine's neighbours

    options = open_user_exits(exits, context, artifacts)
    if not options:
        return None
    title = render(node.title, context) if node.title else f"Choose the next step after `{node.id}`"
    text = node.human_description or node.body.description
    _task, answer = await ask_person(
        services, visit_id=visit_id, node_id=node.id, title=title,
        description=render(text, context) if text else None,
        assignee=node.body.assignee or services.started_by, fields=[choice_field(options)],
        about=fields_about([node.title, text], context),
    )
    chosen = answer.get(CHOICE_FIELD)
    targets = [e.target for e in options]
    if chosen not in targets:  # validated already; a bug if it happens
        raise NodeFailed(f"`{node.id}`: the answer chose {chosen!r}, not one of {targets}")
    return str(chosen)
