"""The `agent` node: a model in a tool loop (:func:`flows.llm.agent.run_agent`) until it answers.

An ``interaction:`` other than the default ``sys:ProcessAgentNode`` adds that interaction's
prompt segments to the engine's contract (:func:`interaction_messages`).

The agent's tools run with this visit as their tool context; its ``ask_user`` tool asks a person
through the same human-task path as a `human_task` node (:func:`flows.runtime.bodies.human_task.ask_person`).
An agent with the workstream tools gets its visit's :class:`~flows.runtime.workstreams.Workstreams`
(the children it launches, and the hooks that bring their results to its loop); the visit ends
only once they have, and stops those still open (interactive ones) when it does.

An agent whose tools name skills (``learn_<skill>``) or ``list_tools`` runs with its conversation's
:class:`~flows.tools.skills.Offer` and a toolbox that offers the model what it may call now
(:mod:`flows.tools.skills`): a skill's tools from the turn after it was learned. The workstream
hub is prepared when a skill could unlock the workstream tools too; a workstream may be given only
tools the agent declared, never its skills.

In a test case (``ergon test``) whose ``mocks.interactions`` names the node's interaction, the
loop does not run: the case's answer is the final answer (:func:`stood_in`).
"""

from __future__ import annotations

import functools
import json
from typing import Any

from compiler.builtin_interactions import PROCESS_AGENT_NODE
from compiler.ir import AgentNode
from compiler.plan import PlanNode
from compiler.skills import is_skill_tool
from compiler.templates import render, render_value
from flows.llm.agent import AgentResult, AgentTask, parse_answer, run_agent
from flows.llm.interactions import render_messages, validate_input
from flows.llm.types import InvalidOutput, LlmError
from flows.runtime.bodies.human_task import ask_person
from flows.runtime.bodies.llm import budget_guard, model_of, update_from
from flows.runtime.effects import Effect, Services
from flows.runtime.errors import NodeFailed
from flows.runtime.workstreams import Workstreams, uses_workstreams
from flows.stand_ins import STAND_INS, StandInFailure
from flows.tools import invoke as toolbox
from flows.tools.context import CURRENT, ToolContext
from flows.tools.errors import ToolError
from flows.tools.skills import OFFER, SkillToolbox, offer_for


def interaction_messages(node: PlanNode, prompt: str, context: dict[str, Any],
                         services: Services) -> tuple[list[dict[str, Any]], Any]:
    """The node's own interaction (``interaction:``, when not the default ``sys:ProcessAgentNode``):
    its prompt segments rendered over the context, the rendered ``input`` and ``prompt`` (the
    input is validated against the interaction's ``input_schema`` first), and the interaction
    itself (its model or environment when the node names none, its parameters and repair turns;
    its ``result_schema`` is not used: the agent's is derived from ``writes``, as for interaction
    nodes)."""
    body = node.body_as(AgentNode)
    if body.interaction in (None, PROCESS_AGENT_NODE):
        return [], None
    if services.resolve_interaction is None:
        raise NodeFailed(f"agent `{node.id}`: this run cannot resolve interactions", kind="internal")
    interaction = services.resolve_interaction(body.interaction)
    data = {"prompt": prompt, **render_value(body.input or {}, context)}
    try:
        validate_input(interaction, data)
        messages = render_messages(interaction, {**context, **data})
    except LlmError as exc:
        raise NodeFailed(f"agent `{node.id}`: {exc}") from exc
    return messages, interaction


def agent_task(node: PlanNode, context: dict[str, Any], services: Services, visit_id: str | None) -> AgentTask:
    """What the node's agent loop is given: the rendered prompt, its interaction's segments, the
    tools, the result schema, the model and the budget guard."""
    body = node.body_as(AgentNode)
    prompt = render(body.prompt or "", context)
    extra, interaction = interaction_messages(node, prompt, context, services)
    own = {"repair_turns": interaction.repair_turns,
           "parameters": interaction.parameters.model_dump(exclude_none=True) if interaction.parameters else {}} \
        if interaction is not None else {}
    return AgentTask(
        node_id=node.id, prompt=prompt, process_name=services.process_name,
        process_description=services.process_description, writes=list(node.writes),
        result_schema=node.result_schema or {"type": "object"}, context=context,
        tools=list(node.agent_tools or []), next_nodes=list(node.next_node_enum or []),
        max_iterations=body.max_iterations,
        model=model_of(node, services, interaction and (interaction.model or interaction.environment)),
        run_id=services.run_id, visit_id=visit_id, guard=budget_guard(node, services, visit_id),
        interaction_messages=extra, **own,
    )


async def run_task(node: PlanNode, task: AgentTask, services: Services, visit_id: str | None) -> AgentResult:
    """Run the agent loop of ``task`` with this visit as its tools' context (and its workstreams)."""
    body = node.body_as(AgentNode)
    try:
        answer = stood_in(body.interaction or PROCESS_AGENT_NODE, task)
    except LlmError as exc:
        raise NodeFailed(f"agent `{node.id}`: {exc}") from exc
    if answer is not None:
        return answer
    try:
        offer = offer_for(task.tools, process=services.process_name, node=node.id)
    except ToolError as exc:
        raise NodeFailed(f"agent `{node.id}`: {exc}") from exc
    reach = [*task.tools, *(offer.unlockable() if offer is not None else [])]
    hub = None
    if uses_workstreams(reach) and services.run_id is not None and visit_id is not None:
        own = [t for t in task.tools if not is_skill_tool(t)]
        hub = Workstreams(run_id=services.run_id, visit_id=visit_id, node_id=node.id, model=task.model, tools=own,
                          max_iterations=task.max_iterations, environments=services.environments,
                          started_by=services.started_by, process_name=services.process_name, guard=task.guard,
                          runner=services.run_workstream)
        task.hooks = hub
    token = CURRENT.set(ToolContext(run_id=services.run_id, visit_id=visit_id, node_id=node.id,
                                    started_by=services.started_by, assignee=body.ask_user,
                                    ask=functools.partial(ask_person, services, visit_id=visit_id),
                                    environments=services.environments, workstreams=hub))
    offered = OFFER.set(offer)
    try:
        return await run_agent(task, toolbox=SkillToolbox(offer) if offer is not None else toolbox,
                               environments=services.environments)
    except LlmError as exc:
        raise NodeFailed(f"agent `{node.id}`: {exc}") from exc
    finally:
        if hub is not None:
            await hub.close()
        OFFER.reset(offered)
        CURRENT.reset(token)


def stood_in(interaction: str, task: AgentTask) -> AgentResult | None:
    """The final answer a test case gives for the agent, or None when the loop is to run.

    Every visit counts as a call of the node's interaction, answered by the case or not (what a
    test's ``expect.calls`` compares). A given answer is held to the result schema and the step's
    own check as the model's final answer is, without a repair turn (a written answer cannot be
    asked again); a given failure is a model failure (:class:`LlmError`)."""
    stand_ins = STAND_INS.get()
    if stand_ins is None:
        return None
    try:
        replaced, given = stand_ins.interaction(interaction)
    except StandInFailure as exc:
        raise LlmError(str(exc)) from exc
    if not replaced:
        return None
    schema = task.result_schema or {"type": "object"}
    answer, problems = parse_answer(json.dumps(given), schema)
    if answer is not None and task.check_answer is not None:
        problems = task.check_answer(answer)
    if problems:
        raise InvalidOutput("the stand-in answer does not match the result schema: " + "; ".join(problems[:5]))
    return AgentResult(output=answer or {}, responses=[], tool_calls=0)


async def run(node: PlanNode, context: dict[str, Any], services: Services, visit_id: str | None) -> Effect:
    task = agent_task(node, context, services, visit_id)
    result = await run_task(node, task, services, visit_id)
    return Effect(update=update_from(node, result.output), output=result.output,
                  input={"prompt": task.prompt, "tools": task.tools})
