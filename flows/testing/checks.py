"""A test file checked against the definitions it tests, before anything runs.

Everything a test file names must exist: the definition, the nodes of ``expect.route`` and
``mocks.tasks``, the tools and interactions of ``mocks`` and ``expect.calls``, the context fields
of ``inputs`` and ``expect.context``, the fields of a task's answer. A mocked interaction answer
must fit the result schema the model's answer would be held to (the calling node's, derived from
its ``writes``, else the interaction's own; an agent node's final answer under its interaction,
``sys:ProcessAgentNode`` by default; a built-in step's model call, ``sys:SummarizeText``…, the
step's result); a mocked tool result must be a value the tool can
return (a built-in's whole result schema, else the JSON types of its Python return hint; a tool
whose result is not known — no hint, served over HTTP — is not checked). Each problem is a diagnostic at its place in the
test file with a hint naming the close choices, like the compiler's own — a typo in a test
must not pass as a test that fails for another reason, nor as one that never compares.

The checks need the compiled definition only (no store, no model, no Prefect), so ``ergon
check`` runs them too.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from compiler import Diagnostic
from compiler.builtin_interactions import BUILTIN, PROCESS_AGENT_NODE
from compiler.builtin_signatures import MODEL_STEPS, answer_schema
from compiler.errors import choices_hint
from compiler.ir import AgentNode, HumanTaskNode, InteractionDef, InteractionNode
from compiler.tool_signatures import json_type
from compiler.plan import Plan, PlanNode, build_plan
from compiler.tool_signatures import UNKNOWN_MEMBERS
from compiler.workspace import Unit, Workspace
from flows.schema import schema_errors
from flows.testing.spec import Case, LoadedTests, Result

#: The diagnostic codes of test files (beside the compiler's ``unknown-key``, ``missing-field``,
#: ``wrong-type``, ``bad-value``, ``yaml-syntax`` and ``duplicate-key`` for the file's shape).
CODES: dict[str, str] = {
    "unknown-definition": "the definition under test is not in the definitions folder",
    "broken-definition": "the definition under test has errors of its own (`ergon check` lists them)",
    "unknown-node": "a node of `expect.route`, `expect.refused` or `mocks.tasks` that the definition does not have",
    "unknown-tool": "a tool of `mocks.tools` or `expect.calls` that is not registered",
    "unknown-interaction": "an interaction of `mocks.interactions` or `expect.calls` that is not defined",
    "unknown-field": "a field of `inputs`, `expect.context` or a task answer the definition does not declare",
    "unknown-outcome": "an `expect.outcome` the definition cannot end with",
    "mock-result": "a mocked interaction answer or tool result does not fit what the model or the tool can give",
}


def definition_unit(loaded: LoadedTests, ws: Workspace) -> Unit | None:
    """The unit of the definition the file tests: by name, or by path (relative to the test
    file's folder, then to the working folder)."""
    assert loaded.spec is not None
    name = loaded.spec.definition
    for candidate in (Path(loaded.file).parent / name, Path(name)):
        if candidate.suffix in (".yaml", ".yml", ".json") and candidate.is_file():
            for unit in ws.units:
                if Path(unit.file).resolve() == candidate.resolve():
                    return unit
    return ws.named("process", "pipeline", "template", "workflow").get(name)


def check_test_file(loaded: LoadedTests, ws: Workspace, errors_of: Any) -> tuple[Plan | None, list[Diagnostic]]:
    """The Plan under test and the problems of the file (empty when it may run).

    ``errors_of(unit)`` gives the definition's own errors (the caller has checked the workspace)."""
    if loaded.spec is None:
        return None, list(loaded.diagnostics)
    unit = definition_unit(loaded, ws)
    if unit is None:
        runnable = ws.named("process", "pipeline", "template", "workflow")
        return None, [loaded.at(("definition",), "unknown-definition",
                                f"no runnable definition named `{loaded.spec.definition}`",
                                choices_hint(loaded.spec.definition, runnable, what="definitions"))]
    own = errors_of(unit)
    if own:
        return None, [loaded.at(("definition",), "broken-definition",
                                f"`{loaded.spec.definition}` has {len(own)} error(s) of its own ({own[0].file}:{own[0].line})",
                                "run `ergon check` and fix the definition first")]
    plan = build_plan(unit, ws)
    found = [d for i, case in enumerate(loaded.spec.cases) for d in _case_problems(loaded, ws, plan, i, case)]
    return plan, found


def all_nodes(plan: Plan) -> Iterator[PlanNode]:
    """Every node of the Plan, fan-out leaves included."""
    stack = list(plan.nodes.values())
    while stack:
        node = stack.pop(0)
        yield node
        stack.extend(node.children.values())


def _interactions(ws: Workspace) -> dict[str, Any]:
    """Every interaction a case may mock or count: the built-in ones, the model calls of the
    built-in steps that ask a model, and the project's."""
    return {**BUILTIN, **_model_steps(), **{name: unit.defn for name, unit in ws.named("interaction").items()}}


def _model_steps() -> dict[str, InteractionDef]:
    """The model calls of the built-in steps (``sys:SummarizeText`` for ``summarizeText``…), each
    with the schema its answer is held to at run time: exactly the members of the step's result.
    (``classifyText``'s category is also held to the call's categories, known only at run time.)"""
    found = {}
    for tool, name in MODEL_STEPS.items():
        found[name] = InteractionDef.model_validate({
            "kind": "interaction", "name": name, "prompts": [],
            "description": f"The model call of the built-in step `{tool}`.", "result_schema": answer_schema(tool)})
    return found


def _case_problems(loaded: LoadedTests, ws: Workspace, plan: Plan, i: int, case: Case) -> Iterator[Diagnostic]:
    base: tuple[str | int, ...] = ("cases", i)
    fields = list(plan.context_schema.get("properties", {}))
    tools = ws.tools.names()
    interactions = _interactions(ws)
    nodes = {n.id: n for n in all_nodes(plan)}

    def unknown_fields(keys: Iterable[str], path: tuple[str | int, ...], what: str) -> Iterator[Diagnostic]:
        if not fields:  # a context schema without properties declares no names to hold a key to
            return
        for key in keys:
            if key not in fields:
                yield loaded.at((*path, key), "unknown-field", f"`{key}` is not a field of {plan.name}'s context ({what})",
                                choices_hint(key, fields, what="fields"), key=True)

    yield from unknown_fields(case.inputs, (*base, "inputs"), "an input")
    for name, results in case.mocks.tools.items():
        if name not in tools:
            yield loaded.at((*base, "mocks", "tools", name), "unknown-tool", f"no tool named `{name}`",
                            choices_hint(name, tools, what="tools"), key=True)
            continue
        yield from _tool_result_problems(loaded, ws, name, results, (*base, "mocks", "tools", name))
    for name, results in case.mocks.interactions.items():
        where = (*base, "mocks", "interactions", name)
        if name not in interactions:
            yield loaded.at(where, "unknown-interaction", f"no interaction named `{name}`",
                            choices_hint(name, interactions, what="interactions"), key=True)
            continue
        yield from _answer_problems(loaded, plan, interactions[name], name, results, where)
    for node_id, task in case.mocks.tasks.items():
        where = (*base, "mocks", "tasks", node_id)
        node = nodes.get(node_id)
        if node is None or node.type != "human_task":
            tasks = [n.id for n in nodes.values() if n.type == "human_task"]
            said = f"`{node_id}` is not a human_task node of {plan.name}" if node is not None \
                else f"{plan.name} has no node `{node_id}`"
            yield loaded.at(where, "unknown-node", said, choices_hint(node_id, tasks, what="human-task nodes"), key=True)
            continue
        names = [f.name for f in node.body_as(HumanTaskNode).task.fields]
        listed = list(enumerate(task)) if isinstance(task, list) else [(None, task)]
        for k, one in listed:
            at = where if k is None else (*where, k)
            for key in one.answer:
                if key not in names:
                    yield loaded.at((*at, "answer", key), "unknown-field", f"the task of `{node_id}` has no field `{key}`",
                                    choices_hint(key, names, what="its fields"), key=True)
    expect = case.expect
    for j, node_id in enumerate(expect.refused or []):
        node = nodes.get(node_id)
        if node is None or node.type != "human_task":
            tasks = [n.id for n in nodes.values() if n.type == "human_task"]
            yield loaded.at((*base, "expect", "refused", j), "unknown-node",
                            f"`{node_id}` is not a human_task node of {plan.name}",
                            choices_hint(node_id, tasks, what="human-task nodes"))
    for j, node_id in enumerate(expect.route or []):
        if node_id not in plan.nodes:
            yield loaded.at((*base, "expect", "route", j), "unknown-node", f"{plan.name} has no node `{node_id}`",
                            choices_hint(node_id, plan.nodes, what="nodes"))
    if expect.outcome is not None:
        outcomes = plan.finals if plan.control == "state_machine" else ["completed"]
        if expect.outcome not in outcomes:
            yield loaded.at((*base, "expect", "outcome"), "unknown-outcome",
                            f"{plan.name} cannot end with outcome `{expect.outcome}`",
                            choices_hint(expect.outcome, outcomes, what="its outcomes (final nodes)"))
    yield from unknown_fields(expect.context or {}, (*base, "expect", "context"), "an expected value")
    callable_names = sorted({*tools, *interactions})
    for name in expect.calls or {}:
        if name not in tools and name not in interactions:
            yield loaded.at((*base, "expect", "calls", name), "unknown-tool", f"no tool or interaction named `{name}`",
                            choices_hint(name, callable_names, what="tools and interactions"), key=True)


def _answer_problems(loaded: LoadedTests, plan: Plan, interaction: Any, name: str, results: Result | list[Result],
                     where: tuple[str | int, ...]) -> Iterator[Diagnostic]:
    """Each mocked answer against the schemas the calls of the interaction in this Plan are held
    to: an interaction node's, and an agent node's final answer (the object its ``writes``
    derive). The nodes sharing an interaction (every agent node's default ``sys:ProcessAgentNode``)
    take the answers in the order they call it, which only a run knows: an answer must fit one of
    their schemas here, and is held to its caller's at run time. A template's steps are held at
    run time to their cited output form, not known here."""
    schemas = [n.result_schema or interaction.result_schema for n in all_nodes(plan)
               if n.type == "interaction" and n.body_as(InteractionNode).interaction == name]
    if plan.kind != "template":
        schemas += [n.result_schema or {"type": "object"} for n in all_nodes(plan)
                    if n.type == "agent" and (n.body_as(AgentNode).interaction or PROCESS_AGENT_NODE) == name]
    schemas = [s for s in schemas if s] or ([interaction.result_schema] if interaction.result_schema else [])
    unique = list({json.dumps(s, sort_keys=True): s for s in schemas}.values())
    listed = results if isinstance(results, list) else [results]
    for k, result in enumerate(listed):
        if result.fails or not unique:
            continue
        found = [schema_errors(schema, result.returns) for schema in unique]
        if all(found):
            path = (*where, k, "returns") if isinstance(results, list) else (*where, "returns")
            schema, problems = unique[0], found[0]
            hint = f"the answer must be valid against: {_short_schema(schema)}" if len(unique) == 1 else \
                "the answer must be valid against one of: " + "; ".join(_short_schema(s) for s in unique)
            yield loaded.at(path, "mock-result", f"the answer does not fit the result schema of `{name}`: "
                            + "; ".join(problems[:3]), hint)


def _tool_result_problems(loaded: LoadedTests, ws: Workspace, name: str, results: Result | list[Result],
                          where: tuple[str | int, ...]) -> Iterator[Diagnostic]:
    """Each mocked result against what the tool can return: a test whose tool "returns" a value the
    real tool never gives tests a run that cannot happen."""
    signature = ws.tools.signature(name)
    shape = signature.result_shape() if signature is not None else None
    if shape is None:  # nothing known of the result: nothing to hold the mock to
        return
    listed = results if isinstance(results, list) else [results]
    for k, result in enumerate(listed):
        if result.fails:
            continue
        problems = schema_errors(shape, result.returns)
        if problems:
            path = (*where, k, "returns") if isinstance(results, list) else (*where, "returns")
            if shape.get("$comment") == UNKNOWN_MEMBERS:
                said, hint = f"`{name}` returns {_types(shape)} (its return type hint), not {json_type(result.returns)}", \
                    f"give a result of type {_types(shape)}, or change the tool's return hint"
            else:
                said, hint = f"the result does not fit what `{name}` returns: " + "; ".join(problems[:3]), \
                    f"the result must be valid against: {_short_schema(shape)}"
            yield loaded.at(path, "mock-result", said, hint)


def _types(shape: dict[str, Any]) -> str:
    kinds = shape.get("type") or []
    kinds = [kinds] if isinstance(kinds, str) else list(kinds)
    return " or ".join(k for k in kinds if not (k == "integer" and "number" in kinds))


def _short_schema(schema: dict[str, Any]) -> str:
    props = schema.get("properties") or {}
    parts = [f"{k}: {v.get('type', 'any') if isinstance(v, dict) else 'any'}" for k, v in props.items()]
    required = schema.get("required") or []
    return "{" + ", ".join(parts) + "}" + (f" with {', '.join(required)} required" if required else "")
