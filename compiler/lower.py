"""Lowering: `template` and `workflow` definitions → a `pipeline` (plus per-node extras).

Both kinds are front-ends over the pipeline runtime, so the executor knows one DAG model only.
Each lowering is a pure function from frozen IR to new frozen IR. What a pipeline node cannot
say (a workflow step's ``projection``/``fetch``, a ``$regexp`` condition, "a skipped step does
not skip the steps after it") travels beside it as ``extras[node_id]``; the Plan copies these
onto its nodes (:mod:`compiler.plan`).

**template** (seed 000, agent templates): the context is ``{input: <input form>, <output_key>:
<output form>...}`` with ``input`` required; each step becomes an ``agent`` node named after its
key that needs its ``parent`` and writes its ``output_key``.

**workflow** (seed 002, workflow DSL): literal ``vars`` become ``context.initial``, and since
nothing writes them they are run inputs too, with their value as default: each gets the JSON
Schema of its value's type (:func:`value_schema`: a list of strings is an array of strings, a
null is null), so a run overriding one with a value of another type is refused when it starts,
not handed to a step that cannot take it. Vars whose value holds ``${}`` references are computed by a leading
``set_context`` tool node (``_vars``), since they depend on the run's input. Every step needs the previous step, which keeps the DSL's
sequential order. An ``async: true`` child workflow needs the previous step but nobody needs it
except a ``_join`` node added at the end, so it runs beside the following steps and the run still
waits for it. ``${a.b}`` becomes the Jinja ``{{a.b}}`` (a value that is exactly one reference
becomes exactly one ``{{x}}``, which the runtime renders to the native value), except in the
params an activity takes as written (``extras["verbatim"]``: a ``runJavascriptCode`` step's
``code``, whose ``${}`` are JavaScript's). Conditions
become the node's JSON Logic ``when``:

==========  ===============================================
``$eq``     ``{"==": [{"var": p}, v]}`` (likewise ``$ne``  ``!=``, ``$gt`` ``>``, ``$gte`` ``>=``,
            ``$lt`` ``<``, ``$lte`` ``<=``)
``$in``     ``{"in": [{"var": p}, [..]]}``; ``$nin`` is its negation ``{"!": ...}``
``$regexp`` not JSON Logic (datalogic's core has no regex operator): kept in
            ``extras["when_regexp"] = [{"var": p, "pattern": r}]`` and evaluated by the runtime
            with Python ``re.search`` on ``str(value)``; the node runs only if ``when`` and every
            pattern pass.
==========  ===============================================

Both shapes ``{path: {$op: v}}`` and ``{$op: {path: v}}`` are accepted, several clauses are
ANDed, and ``{path: value}`` (no operator) means ``$eq`` as in MongoDB. In the DSL a condition
concerns its own step only, whereas a pipeline's ``when`` skips a node *and its dependents*;
lowered workflow nodes therefore carry ``extras["skip_propagates"] = False`` ("a skipped need
still counts as done for ordering").

Lowering assumes the definition passed ``compiler.passes.lowered_kinds``; it raises ``KeyError``
only for a form that does not exist (a caller that skipped the checks).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from compiler.forms import form_schema
from compiler.tools import VERBATIM_PARAMS
from compiler.ir import (
    AgentNode,
    ContextSpec,
    FormDef,
    PipelineDef,
    ProcessNode,
    Returns,
    TemplateDef,
    ToolConfig,
    ToolNode,
    WorkflowDef,
    WorkflowStep,
)

#: Extras of one lowered node: projection, fetch, when_regexp, skip_propagates, source_step.
Extras = dict[str, dict[str, Any]]

#: `${ expr }` references of the workflow DSL.
REF_RE = re.compile(r"\$\{\s*([^}]*?)\s*\}")
_ROOT_RE = re.compile(r"[A-Za-z_$][\w$-]*")

#: DSL condition operators → JSON Logic operators (``$regexp`` is handled apart).
CONDITION_OPS: dict[str, str] = {
    "$eq": "==", "$ne": "!=", "$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<=",
    "$in": "in", "$nin": "!in", "$regexp": "regexp",
}

VARS_NODE = "_vars"
JOIN_NODE = "_join"


class Lowered(NamedTuple):
    """A lowered definition: the pipeline and the extras of its nodes (by node id)."""

    pipeline: PipelineDef
    extras: Extras


# --------------------------------------------------------------------------------------------
# `${}` references


def ref_root(expr: str) -> str | None:
    """The variable a reference reads: ``a`` for ``a.b[0]``."""
    m = _ROOT_RE.match(expr)
    return m.group(0) if m else None


def iter_refs(value: Any, path: tuple = ()):
    """Yield ``(doc path, expression)`` for every ``${}`` reference inside a params-like value."""
    if isinstance(value, str):
        for m in REF_RE.finditer(value):
            yield path, m.group(1)
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from iter_refs(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from iter_refs(v, (*path, i))


def to_jinja(value: Any) -> Any:
    """``${a.b}`` → ``{{a.b}}`` throughout a params-like value (other values unchanged)."""
    if isinstance(value, str):
        return REF_RE.sub(lambda m: "{{" + m.group(1) + "}}", value)
    if isinstance(value, dict):
        return {k: to_jinja(v) for k, v in value.items()}
    if isinstance(value, list):
        return [to_jinja(v) for v in value]
    return value


def has_refs(value: Any) -> bool:
    return next(iter_refs(value), None) is not None


# --------------------------------------------------------------------------------------------
# Conditions


@dataclass(frozen=True, slots=True)
class Clause:
    """One comparison of a DSL condition; ``where`` is its path inside the condition mapping."""

    var: str
    op: str
    value: Any
    where: tuple


@dataclass(frozen=True, slots=True)
class ConditionProblem:
    """Something in a condition that cannot be lowered (reported by the lowered_kinds pass)."""

    code: str
    where: tuple
    message: str
    hint: str | None = None


OPS_HINT = "valid operators are " + ", ".join(f"`{op}`" for op in CONDITION_OPS)


def condition_clauses(cond: Mapping[str, Any]) -> tuple[list[Clause], list[ConditionProblem]]:
    """Split a DSL condition into clauses, accepting both shapes; unknown operators are problems."""
    clauses: list[Clause] = []
    problems: list[ConditionProblem] = []
    for key, val in cond.items():
        if key.startswith("$"):  # {$op: {path: value, ...}}
            if key not in CONDITION_OPS:
                problems.append(ConditionProblem("guard-invalid", (key,), f"unknown condition operator `{key}`", OPS_HINT))
            elif not isinstance(val, dict) or not val:
                problems.append(ConditionProblem("bad-value", (key,), f"`{key}` expects a mapping `{{path: value}}`",
                                                 f"write `{key}: {{field: value}}` or `field: {{{key}: value}}`"))
            else:
                clauses.extend(Clause(path, key, v, (key, path)) for path, v in val.items())
        elif isinstance(val, dict) and val and all(isinstance(k, str) and k.startswith("$") for k in val):
            for op, v in val.items():  # {path: {$op: value, ...}}
                if op not in CONDITION_OPS:
                    problems.append(ConditionProblem("guard-invalid", (key, op), f"unknown condition operator `{op}`", OPS_HINT))
                else:
                    clauses.append(Clause(key, op, v, (key, op)))
        else:  # {path: value}: equality, as in MongoDB
            clauses.append(Clause(key, "$eq", val, (key,)))
    return clauses, problems


def _operand(value: Any) -> Any:
    """A condition value; exactly ``${x}`` compares against the variable ``x``."""
    if isinstance(value, str):
        m = REF_RE.fullmatch(value)
        if m:
            return {"var": m.group(1)}
    return value


def clause_logic(clause: Clause) -> Any:
    """JSON Logic for one non-regexp clause."""
    left = {"var": clause.var}
    right = _operand(clause.value)
    if clause.op == "$nin":
        return {"!": {"in": [left, right]}}
    return {CONDITION_OPS[clause.op]: [left, right]}


def lower_condition(cond: Mapping[str, Any] | None) -> tuple[Any, list[dict[str, Any]]]:
    """(JSON Logic ``when`` or None, regexp clauses for the runtime)."""
    if not cond:
        return None, []
    clauses, _ = condition_clauses(cond)
    rules = [clause_logic(c) for c in clauses if c.op != "$regexp"]
    regexps = [{"var": c.var, "pattern": str(c.value)} for c in clauses if c.op == "$regexp"]
    when = None if not rules else rules[0] if len(rules) == 1 else {"and": rules}
    return when, regexps


# --------------------------------------------------------------------------------------------
# template


def mapped_output(mapping: Mapping[str, str]) -> dict[str, Any]:
    """A mapping step's ``{"group.field": expr, "group": expr}`` as the nested form data it renders to."""
    out: dict[str, Any] = {}
    for key, expr in mapping.items():
        group, _, field = key.partition(".")
        if field:
            slot = out.setdefault(group, {})
            if isinstance(slot, dict):
                slot[field] = expr
        else:
            out[group] = expr
    return out


def lower_template(defn: TemplateDef, forms: Mapping[str, FormDef], all_tools: list[str] | None = None) -> Lowered:
    """A template as a pipeline of agent nodes (see the module docstring). A step whose
    ``tools_allowed`` is empty gets ``all_tools`` (the seed: "empty = all tools allowed";
    :func:`compiler.tools.all_agent_tools` of the workspace); without them, the agent defaults."""
    properties: dict[str, Any] = {"input": form_schema(forms[defn.input_form])}
    nodes: dict[str, AgentNode | ToolNode] = {}
    extras: Extras = {}
    for step in defn.steps:
        properties[step.output_key] = form_schema(forms[step.output_form])
        extras[step.key] = {"source_step": step.key, "output_form": step.output_form, "parent": step.parent}
        if step.mapping is not None:  # no model: a fixed update rendered over the context
            nodes[step.key] = ToolNode(type="tool", title=step.name, description=step.description,
                                       config=ToolConfig(context_update={step.output_key: mapped_output(step.mapping)}),
                                       writes=[step.output_key], needs=[step.parent] if step.parent else [],
                                       retry=step.retry_policy)
            extras[step.key]["mapping"] = dict(step.mapping)
            continue
        nodes[step.key] = AgentNode(
            type="agent",
            title=step.name,
            description=step.description,
            prompt=step.prompt,
            writes=[step.output_key],
            needs=[step.parent] if step.parent else [],
            tools=list(step.tools_allowed) or list(all_tools or []),
            retry=step.retry_policy,
            model=step.model,
            environment=step.environment,
        )
    used = [defn.input_form, *(step.output_form for step in defn.steps)]
    pipeline = PipelineDef(
        kind="pipeline",
        name=defn.name,
        description=defn.description,
        context=ContextSpec(schema_={"type": "object", "properties": properties, "required": ["input"]}),
        nodes=nodes,
        # the runtime reads and writes submissions of these forms (flows.submissions.template_runs)
        metadata={"lowered_from": "template", "output_type": defn.output_type, "input_form": defn.input_form,
                  "forms": {name: forms[name].model_dump(mode="json", by_alias=True, exclude_none=True)
                            for name in dict.fromkeys(used)}},
        triggers=list(defn.triggers),
    )
    return Lowered(pipeline, extras)


# --------------------------------------------------------------------------------------------
# workflow


def _safe_id(text: str) -> str:
    return re.sub(r"\W+", "_", text).strip("_") or "step"


def workflow_step_ids(defn: WorkflowDef) -> list[str]:
    """Node id of each step: its ``id`` or name, suffixed ``_2``, ``_3``… when repeated."""
    used: set[str] = {VARS_NODE, JOIN_NODE}
    out: list[str] = []
    for step in defn.steps:
        base = step.id or _safe_id(step.name)
        nid, n = base, 1
        while nid in used:
            n += 1
            nid = f"{base}_{n}"
        used.add(nid)
        out.append(nid)
    return out


def verbatim_params(step: WorkflowStep) -> tuple[str, ...]:
    """The params of ``step`` passed as written (:data:`compiler.tools.VERBATIM_PARAMS`)."""
    if step.type != "activity":
        return ()
    return tuple(k for k in VERBATIM_PARAMS.get(step.name, ()) if k in step.params)


def step_node(step: WorkflowStep, needs: list[str]) -> ToolNode | ProcessNode:
    """The pipeline node of one workflow step: a tool node for an activity, a process node for a
    child workflow (its ``params`` the child's ``input``)."""
    when, _ = lower_condition(step.condition)
    verbatim = verbatim_params(step)
    params = {k: v if k in verbatim else to_jinja(v) for k, v in step.params.items()} if step.params else None
    writes = [step.output] if step.output else []
    if step.type == "workflow":
        return ProcessNode(
            type="process", process=step.name, title=step.title, input=params, writes=writes,
            needs=needs, when=when, returns=Returns(**{"from": "context"}) if step.output else None,
        )
    return ToolNode(
        type="tool", tool=step.name, title=step.title, input=params, output=step.output,
        writes=writes, needs=needs, when=when,
    )


def value_schema(value: Any) -> dict[str, Any]:
    """The JSON Schema of a literal value's type: ``null`` for null (a var that should take a value
    of some type from the run's input is declared in ``input_schema``), arrays with the one schema
    all their items share (none when they differ or there are none), objects with their
    properties', all required."""
    if value is None:
        return {"type": "null"}
    if isinstance(value, bool):
        return {"type": "boolean"}
    if isinstance(value, int):
        return {"type": "integer"}
    if isinstance(value, float):
        return {"type": "number"}
    if isinstance(value, str):
        return {"type": "string"}
    if isinstance(value, list):
        items = [value_schema(v) for v in value]
        same = items and all(i == items[0] for i in items)
        return {"type": "array", **({"items": items[0]} if same and items[0] else {})}
    if isinstance(value, Mapping):  # the shape of the value: a run input replacing the var keeps it
        return {"type": "object", "properties": {str(k): value_schema(v) for k, v in value.items()},
                "required": [str(k) for k in value]}
    return {}


def workflow_inputs(defn: WorkflowDef) -> dict[str, Any]:
    """The input_schema's properties (empty when the schema has none, or a malformed one)."""
    props = (defn.input_schema or {}).get("properties")
    return dict(props) if isinstance(props, dict) else {}


def lower_workflow(defn: WorkflowDef) -> Lowered:
    """A workflow as a pipeline of tool and process nodes (see the module docstring)."""
    input_props = workflow_inputs(defn)
    properties: dict[str, Any] = dict(input_props)
    literal_vars = {k: v for k, v in defn.vars.items() if not has_refs(v)}
    dynamic_vars = {k: v for k, v in defn.vars.items() if has_refs(v)}
    outputs = {step.output for step in defn.steps if step.output}
    for name in defn.vars:
        # a var a step also writes is no input: its value's type must not constrain that write
        typed = name in literal_vars and name not in outputs
        properties.setdefault(name, value_schema(literal_vars[name]) if typed else {})
    required = [k for k in input_props if k not in literal_vars]

    nodes: dict[str, ToolNode | ProcessNode] = {}
    extras: Extras = {}
    prev: str | None = None
    if dynamic_vars:  # computed vars depend on the input: set them before the first step
        nodes[VARS_NODE] = ToolNode(
            type="tool", tool="set_context", title="compute workflow vars",
            input={"updates": to_jinja(dynamic_vars)}, writes=list(dynamic_vars),
        )
        extras[VARS_NODE] = {"skip_propagates": False}
        prev = VARS_NODE

    async_ids: list[str] = []
    for i, (step, nid) in enumerate(zip(defn.steps, workflow_step_ids(defn), strict=True)):
        if step.output:
            properties.setdefault(step.output, {})
        nodes[nid] = step_node(step, [prev] if prev else [])
        extra: dict[str, Any] = {"skip_propagates": False, "source_step": i}
        _, regexps = lower_condition(step.condition)
        if regexps:
            extra["when_regexp"] = regexps
        if step.projection:
            extra["projection"] = dict(step.projection)
        if step.fetch:
            extra["fetch"] = to_jinja(step.fetch)
        if step.import_:
            extra["import"] = list(step.import_)
        if verbatim_params(step):
            extra["verbatim"] = list(verbatim_params(step))
        extras[nid] = extra
        if step.type == "workflow" and step.async_:
            async_ids.append(nid)
        else:
            prev = nid
    if async_ids:  # the run ends only when the async children have ended too
        nodes[JOIN_NODE] = ToolNode(
            type="tool", tool="noop", title="wait for async child workflows",
            needs=([prev] if prev else []) + async_ids,
        )
        extras[JOIN_NODE] = {"skip_propagates": False}

    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    pipeline = PipelineDef(
        kind="pipeline",
        name=defn.name,
        description=defn.description,
        context=ContextSpec(schema_=schema, initial=literal_vars),
        nodes=nodes,
        metadata={"lowered_from": "workflow"},
        triggers=list(defn.triggers),
    )
    return Lowered(pipeline, extras)


def lower(defn: TemplateDef | WorkflowDef, forms: Mapping[str, FormDef] | None = None,
          all_tools: list[str] | None = None) -> Lowered:
    """Lower a template (needs its forms by name, and the tools a step without ``tools_allowed``
    gets) or a workflow."""
    if isinstance(defn, TemplateDef):
        return lower_template(defn, forms or {}, all_tools)
    if isinstance(defn, WorkflowDef):
        return lower_workflow(defn)
    raise TypeError(f"only templates and workflows are lowered, not {type(defn).__name__}")
