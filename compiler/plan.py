"""The executable Plan: everything the runtime needs, as plain data you can print and snapshot.

Every runnable kind (process, pipeline, template, workflow) compiles to one :class:`Plan`.
Templates and workflows are lowered to pipelines first (:mod:`compiler.lower`); the Plan keeps
the source kind and name, and the lowering's per-node extras. The Plan is the boundary between
the compiler and ``flows``: ``flows.prefect`` builds a Prefect flow from it without looking at the IR
again, so everything derived is computed here once —

* ``version``: first 12 hex digits of the SHA-256 of the source definition as canonical JSON
  (sorted keys, no whitespace), so reformatting or reordering keys keeps the version and any
  change of content makes a new one (it becomes the Prefect flow version);
* ``input_schema``: the run's parameters — the context schema's ``required`` properties plus
  the properties that no node writes; a ``context.initial`` value becomes the parameter's
  ``default`` (so ``publish: false`` is an optional input, as Prefect's form shows it);
* per node: the derived ``result_schema`` of interaction and agent nodes, the ``_next_node``
  enum, the resolved agent tool list, the retry policy (default: no retries), ``halt`` for
  human tasks and for nodes with ``trigger: user`` exits (``user_choice``: a person picks the
  exit, see :mod:`flows.runtime.routing`), fan-out leaves compiled as child nodes (``children``), and inline
  ``process_definition`` children compiled to nested Plans (``child_plan``) so that the runtime
  never calls the compiler.

A node's ``body`` is typed: an instance of the :mod:`compiler.ir` class of its ``type``
(``ToolNode``, ``ForeachNode``…), read by attribute; :meth:`PlanNode.body_as` hands it out as
the class its reader expects (``TypeError`` otherwise). It is the node's IR rebuilt from its JSON
dump, so its free-form values (``input``, guards, ``config.context_update``…) are JSON data as in
the Plan's JSON — a YAML date is its ISO string — and a Plan read back from its JSON equals the
one compiled. In JSON a body is that dump (:func:`ir_json`): the IR node as written, keys by
alias, None values left out.

Nodes of a lowered workflow may carry ``skip_propagates = False``: when one of their needs was
skipped (its ``when`` was false) they still run — the workflow DSL's condition concerns its own
step only. ``extras`` holds what the lowering could not express in IR: ``projection`` and
``fetch`` of a workflow step (applied by the ``tool`` body: ``flows.runtime.dsl``), ``when_regexp`` (``[{var, pattern}]``: the node runs only if
``re.search(pattern, str(value))`` matches for each, in addition to ``when``), ``import``,
``verbatim`` (input keys the ``tool`` body passes as written, unrendered) and ``source_step`` (index or key of the step the node came from). Everything else a lowered node
says is in its body: the lowerings build IR nodes (``AgentNode``, ``ToolNode``, ``ProcessNode``),
which refuse keys they do not declare.
"""

from __future__ import annotations

import builtins
import hashlib
import json
from typing import Any, Literal, TypedDict, TypeVar

from pydantic import BaseModel, ConfigDict, Field, field_serializer, model_validator

from compiler.errors import CompileError, did_you_mean
from compiler.graph import Edge, pipeline_graph, process_graph
from compiler.ir import (
    AgentNode,
    BranchNode,
    FormDef,
    ForeachNode,
    HumanTaskNode,
    InteractionNode,
    Node,
    NodeBase,
    PipelineDef,
    ProcessDef,
    ProcessNode,
    RetryPolicy,
    TemplateDef,
    WorkflowDef,
)
from compiler.lower import Extras, lower_template, lower_workflow
from compiler.result_schema import InteractionResults, interaction_results, node_result_schema
from compiler.tools import all_agent_tools, resolve_agent_tools

def _a(kind: str | None) -> str:
    return f"an {kind}" if kind and kind[0] in "aeiou" else f"a {kind}"


RUNNABLE_KINDS: tuple[str, ...] = ("process", "pipeline", "template", "workflow")
NOT_RUNNABLE_KINDS: tuple[str, ...] = ("interaction", "form", "environment")


class PlanModel(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class PlanEdge(PlanModel):
    """A possible move: a transition, condition branch, default branch, timeout, or a `needs`."""

    source: str
    target: str
    kind: str = Field(description="transition | branch | default | timeout | needs")
    guard: Any = Field(None, description="JSON Logic guard (transitions and branches).")
    trigger: str = Field("auto", description="auto | agent | user")
    label: str | None = None
    order: int = Field(0, description="Position among the source's exits (tried in this order).")


#: An IR node class, as :meth:`PlanNode.body_as` is asked for it.
N = TypeVar("N", bound=NodeBase)


def ir_json(model: BaseModel) -> dict[str, Any]:
    """An IR model (a node, a task field...) as the Plan's JSON holds it: by alias, without None
    values, in JSON mode."""
    return model.model_dump(by_alias=True, exclude_none=True, mode="json")


class FetchSpec(TypedDict, total=False):
    """``extras["fetch"]`` of a lowered workflow step (checked by ``compiler.passes.lowered_kinds``,
    run by ``flows.runtime.dsl.fetch``); string values may hold Jinja rendered over the context."""

    type: Literal["document"]
    query: dict[str, Any]
    select: list[str]
    limit: int
    on_not_found: Literal["throw", "ignore"]


#: ``extras["projection"]``: ``$include`` / ``$exclude`` → field paths (``flows.runtime.dsl.project``).
Projection = dict[Literal["$include", "$exclude"], list[str]]


class PlanNode(PlanModel):
    """One node, with everything the runtime derives from the definition precomputed."""

    id: str
    type: str
    body: Node = Field(
        description="The IR node, of the class of `type`, with JSON values (see the module docstring); "
        "in JSON its dump by alias without None values."
    )
    writes: list[str] = Field(default_factory=list)
    needs: list[str] = Field(default_factory=list, description="Pipeline: nodes that must be done first.")
    when: Any = Field(None, description="Pipeline: JSON Logic; false skips the node.")
    skip_propagates: bool = Field(True, description="False: a skipped need does not skip this node (lowered workflows).")
    result_schema: dict[str, Any] | None = Field(None, description="Derived result schema of interaction and agent nodes.")
    next_node_enum: list[str] | None = Field(None, description="Agent-triggered transition targets, when there are 2+.")
    agent_tools: list[str] | None = Field(None, description="Resolved tool list of an agent node.")
    retry: RetryPolicy = Field(default_factory=RetryPolicy)
    lane: str | None = None
    phase: str | None = None
    order: float | None = None
    title: str | None = None
    human_description: str | None = None
    halt: bool = Field(False, description="The run pauses here for a person (human_task, or `user_choice`).")
    user_choice: bool = Field(
        False, description="The node has `trigger: user` exits: after its body, a person picks one (`_next_node`)."
    )
    extras: dict[str, Any] = Field(default_factory=dict, description="Lowering extras (see the module docstring).")
    children: dict[str, PlanNode] = Field(
        default_factory=dict, description="Fan-out leaves: `node` of a foreach, branch id → body of a branch."
    )
    child_plan: Plan | None = Field(None, description="Compiled inline `process_definition` of a process node.")

    @model_validator(mode="after")
    def _type_is_the_body_type(self) -> PlanNode:
        if self.body.type != self.type:
            raise ValueError(f"node `{self.id}` has type `{self.type}` and a `{self.body.type}` body")
        return self

    @field_serializer("body")
    def _serialize_body(self, body: NodeBase) -> dict[str, Any]:
        return ir_json(body)

    def body_json(self) -> dict[str, Any]:
        """The body as the Plan's JSON holds it (see :func:`ir_json`)."""
        return ir_json(self.body)

    def fetch_spec(self) -> FetchSpec | None:
        """The workflow step's ``fetch`` (extras), if any."""
        return self.extras.get("fetch") or None

    def projection(self) -> Projection | None:
        """The workflow step's ``projection`` (extras), if any."""
        return self.extras.get("projection") or None

    def verbatim_inputs(self) -> frozenset[str]:
        """Keys of the tool input passed as written, not rendered (extras ``verbatim``)."""
        return frozenset(self.extras.get("verbatim") or ())

    def body_as(self, cls: builtins.type[N]) -> N:  # `type` is a field here
        """The body, typed as the IR node class ``cls``; ``TypeError`` when it is another one."""
        if not isinstance(self.body, cls):
            raise TypeError(f"node `{self.id}` is a `{self.type}` node, not a {cls.__name__}")
        return self.body


class Plan(PlanModel):
    """An executable definition (see the module docstring)."""

    name: str
    kind: str = Field(description="The source kind: process | pipeline | template | workflow.")
    control: Literal["state_machine", "dag"]
    version: str
    description: str | None = None
    initial: str | None = Field(None, description="State machine: the first node.")
    entries: list[str] = Field(default_factory=list, description="Nodes that start the run.")
    context_schema: dict[str, Any]
    context_initial: dict[str, Any] = Field(default_factory=dict)
    input_schema: dict[str, Any]
    nodes: dict[str, PlanNode]
    edges: list[PlanEdge] = Field(default_factory=list)
    finals: list[str] = Field(default_factory=list)
    halt_points: list[str] = Field(default_factory=list)
    triggers: list[dict[str, Any]] = Field(default_factory=list)
    environment: str | None = Field(None, description="Default environment of LLM nodes.")
    budget: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None
    run_type: Literal["programmatic", "supervised"] = Field(
        "programmatic", description="Process: `supervised` when the definition asks for a supervisor on every run.")
    source_file: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The Plan as JSON-ready data (stable key order: field order, then the definition's)."""
        return self.model_dump(mode="json")

    def successors(self, node_id: str) -> list[PlanEdge]:
        return [e for e in self.edges if e.source == node_id]

    def summary(self) -> str:
        """A few lines for people (rich markup)."""
        control = "state machine" if self.control == "state_machine" else "DAG"
        lines = [f"[bold]{self.name}[/]  {self.kind} ({control})  version [cyan]{self.version}[/]"]
        if self.description:
            lines.append(f"  {self.description.strip().splitlines()[0]}")
        required = set(self.input_schema.get("required", []))
        inputs = [f"{p}{'*' if p in required else ''}" for p in self.input_schema.get("properties", {})]
        lines.append(f"  inputs: {', '.join(inputs) if inputs else '(none)'}" + ("   (* required)" if required else ""))
        lines.append(f"  starts at: {', '.join(self.entries)}")
        lines.append(f"  nodes ({len(self.nodes)}):")
        width = max((len(n) for n in self.nodes), default=0)
        for nid, node in self.nodes.items():
            outs = [e.target for e in self.successors(nid)]
            bits = [f"[dim]{node.type:<11}[/]"]
            if node.writes:
                bits.append(f"writes {', '.join(node.writes)}")
            if node.needs:
                bits.append(f"needs {', '.join(node.needs)}")
            if outs and self.control == "state_machine":
                bits.append(f"→ {', '.join(dict.fromkeys(outs))}")
            if node.when is not None or node.extras.get("when_regexp"):
                bits.append("conditional")
            if node.retry.retries:
                bits.append(f"retries {node.retry.retries}")
            if node.halt:
                bits.append("[yellow]waits for a person[/]")
            if node.child_plan is not None:
                bits.append(f"inline child `{node.child_plan.name}`")
            lines.append(f"    {nid:<{width}}  " + "  ".join(bits))
        if self.finals:
            lines.append(f"  outcomes: {', '.join(self.finals)}")
        if self.triggers:
            lines.append(f"  triggers: {', '.join(t.get('type', '?') for t in self.triggers)}")
        return "\n".join(lines)


PlanNode.model_rebuild()
Plan.model_rebuild()


# --------------------------------------------------------------------------------------------
# Building


def canonical_version(data: Any) -> str:
    """First 12 hex digits of SHA-256 over canonical JSON (sorted keys, no whitespace)."""
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def _all_writes(nodes) -> set[str]:
    out: set[str] = set()
    for node in nodes:
        out.update(node.writes)
        if isinstance(node, ForeachNode):
            out |= _all_writes([node.node])
        elif isinstance(node, BranchNode):
            out |= _all_writes([b.node for b in node.branches])
    return out


def run_input_schema(context_schema: dict[str, Any], context_initial: dict[str, Any], written: set[str]) -> dict[str, Any]:
    """Run parameters: required properties, plus properties nothing writes (initial values as
    defaults) — except internal ``_`` fields, which are the engine's, not the caller's."""
    props = context_schema.get("properties") or {}
    required = [r for r in context_schema.get("required", []) if r in props]
    chosen = {k: v for k, v in props.items() if k in required or (k not in written and not k.startswith("_"))}
    for k in chosen:
        if k in context_initial and isinstance(chosen[k], dict) and "default" not in chosen[k]:
            chosen[k] = {**chosen[k], "default": context_initial[k]}
    out: dict[str, Any] = {"type": "object", "properties": chosen}
    if required:
        out["required"] = required
    return out


def _plan_node(nid: str, node, context_schema: dict[str, Any], agent_targets: list[str], source_file: str | None,
               extras: dict[str, Any] | None = None, *, results: InteractionResults = None,
               collected: bool = False) -> PlanNode:
    meta = node.metadata
    extras = dict(extras or {})
    skip_propagates = extras.pop("skip_propagates", True)
    next_enum = list(dict.fromkeys(agent_targets)) if len(set(agent_targets)) >= 2 else None
    result_schema = None
    if isinstance(node, (AgentNode, InteractionNode)) and (node.writes or next_enum):
        result_schema = node_result_schema(node, context_schema, next_enum, results=results, collected=collected)
    children: dict[str, PlanNode] = {}
    if isinstance(node, (ForeachNode, BranchNode)):
        collects = node.collect is not None
        bodies = [("node", node.node)] if isinstance(node, ForeachNode) else [(b.id, b.node) for b in node.branches]
        children = {cid: _plan_node(cid, body, context_schema, [], source_file, results=results, collected=collects)
                    for cid, body in bodies}
    child_plan = None
    if isinstance(node, ProcessNode) and node.process_definition is not None:
        child = node.process_definition
        child_plan = _plan_from(child, kind="process", version=canonical_version(child.model_dump(by_alias=True, exclude_none=True)),
                                source_file=source_file, results=results)
    return PlanNode(
        id=nid,
        type=node.type,
        body=type(node).model_validate(ir_json(node)),  # the IR node as its JSON says it
        writes=list(node.writes),
        needs=list(node.needs),
        when=node.when,
        skip_propagates=skip_propagates,
        result_schema=result_schema,
        next_node_enum=next_enum,
        agent_tools=resolve_agent_tools(node.tools)[0] if isinstance(node, AgentNode) else None,
        retry=node.retry or RetryPolicy(),
        lane=meta.lane if meta else None,
        phase=meta.phase if meta else None,
        order=meta.order if meta else None,
        title=node.title,
        human_description=node.human_description,
        halt=isinstance(node, HumanTaskNode) or _user_choice(node),
        user_choice=_user_choice(node),
        extras=extras,
        children=children,
        child_plan=child_plan,
    )


def _user_choice(node: NodeBase) -> bool:
    return any(t.trigger == "user" for t in node.transitions)


def _edge(e: Edge) -> PlanEdge:
    return PlanEdge(source=e.source, target=e.target, kind=e.kind, guard=e.guard, trigger=e.trigger, label=e.label, order=e.order)


def _plan_from(defn: ProcessDef | PipelineDef, *, kind: str, version: str, source_file: str | None,
               extras: Extras | None = None, name: str | None = None, results: InteractionResults = None) -> Plan:
    is_process = isinstance(defn, ProcessDef)
    if isinstance(defn, ProcessDef):
        graph, own_name, initial = process_graph(defn), defn.process, defn.initial
    else:
        graph, own_name, initial = pipeline_graph(defn), defn.name, None
    schema = defn.context.schema_
    edges = [_edge(e) for nid in defn.nodes for e in graph.succ.get(nid, [])]
    nodes: dict[str, PlanNode] = {}
    for nid, node in defn.nodes.items():
        agent_targets = [t.to for t in node.transitions if t.trigger == "agent"]
        nodes[nid] = _plan_node(nid, node, schema, agent_targets, source_file, (extras or {}).get(nid), results=results)
    return Plan(
        name=name or own_name,
        kind=kind,
        control="state_machine" if is_process else "dag",
        version=version,
        description=defn.description,
        initial=initial,
        entries=list(graph.entries),
        context_schema=schema,
        context_initial=dict(defn.context.initial),
        input_schema=run_input_schema(schema, defn.context.initial, _all_writes(defn.nodes.values())),
        nodes=nodes,
        edges=edges,
        finals=[nid for nid, n in defn.nodes.items() if n.type == "final"],
        halt_points=[nid for nid, n in defn.nodes.items() if n.type == "human_task" or _user_choice(n)],
        triggers=[t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in defn.triggers],
        environment=defn.environment,
        budget=defn.budget.model_dump(exclude_none=True) if defn.budget else None,
        metadata=defn.metadata,
        run_type=defn.run_type if isinstance(defn, ProcessDef) else "programmatic",
        source_file=source_file,
    )


def build_plan(unit, ws) -> Plan:
    """The Plan of one parsed, checked unit (see :func:`compile_plan` for the checking)."""
    defn = unit.defn
    if unit.kind in NOT_RUNNABLE_KINDS:
        raise KeyError(f"`{unit.name}` is {_a(unit.kind)}, not runnable")
    if defn is None:
        raise KeyError(f"`{unit.name or unit.file}` did not parse; run `ergon check {unit.file}`")
    source = unit.data if unit.data is not None else defn.model_dump(by_alias=True, exclude_none=True, mode="json")
    version = canonical_version(source)
    results = interaction_results(ws)
    if isinstance(defn, (ProcessDef, PipelineDef)):
        return _plan_from(defn, kind=unit.kind, version=version, source_file=unit.file, results=results)
    if isinstance(defn, TemplateDef):
        forms = {n: u.defn for n, u in ws.named("form").items() if isinstance(u.defn, FormDef)}
        pipeline, extras = lower_template(defn, forms, all_agent_tools(ws.tools))
    elif isinstance(defn, WorkflowDef):
        pipeline, extras = lower_workflow(defn)
    else:  # pragma: no cover - every kind is listed above
        raise KeyError(f"`{unit.name}` is {_a(unit.kind)}, not runnable")
    return _plan_from(pipeline, kind=unit.kind, version=version, source_file=unit.file, extras=extras, results=results)


def compile_plan(ws, name: str) -> Plan:
    """Check the runnable definition called ``name`` and compile it.

    Raises ``KeyError`` when no runnable definition has that name (with a did-you-mean hint, or
    saying what kind it is) and :class:`CompileError` with every diagnostic when it has errors.
    """
    from compiler.check import locate, unit_findings  # check imports the passes, which import lower

    units = ws.named(*RUNNABLE_KINDS)
    unit = units.get(name)
    if unit is None:
        other = ws.named(*NOT_RUNNABLE_KINDS).get(name)
        if other is not None:
            raise KeyError(f"`{name}` is {_a(other.kind)}, not runnable")
        hint = did_you_mean(name, units)
        raise KeyError(f"no runnable definition named `{name}`" + (f"; {hint}" if hint else ""))
    errors = [d for d in (locate(unit, f) for f in unit_findings(unit, ws)) if d.severity == "error"]
    if errors:
        raise CompileError(sorted(errors, key=lambda d: (d.line, d.col, d.code)))
    return build_plan(unit, ws)
