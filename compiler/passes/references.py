"""The `references` pass: every name a definition uses points at something that exists.

Names are resolved in the workspace (all definitions of the folder, plus the folder given as
context when single files are checked) and the tool catalogue (built-ins, ``tools/*.py``, the
tool manifest). A wrong name gets a "did you mean" hint, or the list of what exists:

* ``unknown-interaction`` — interaction and agent nodes' ``interaction``: an ``interaction``
  definition or one of the built-in ``sys:`` interactions (:mod:`compiler.builtin_interactions`;
  an unknown ``sys:`` name gets the list of those);
* ``agent-only-interaction`` — ``sys:ProcessAgentNode`` (the agent contract) on an interaction node;
* ``unused-agent-input`` — an agent's ``input`` without a custom ``interaction`` to feed;
* ``unknown-tool`` — tool nodes' ``tool`` and agent ``tools`` (``+``/``-`` stripped);
* ``agent-only-tool`` — a tool node naming a built-in only an agent's tool loop runs (the
  workstream tools, ``compiler.tools.AGENT_ONLY_TOOLS``);
* ``unknown-process`` — process nodes' ``process``: any runnable definition (process, pipeline,
  and the kinds lowered to pipelines, template and workflow), unless the child is inline;
* ``unknown-environment`` — ``environment`` on nodes, processes, pipelines and interactions.

Foreach/branch children and the nodes of inline child definitions are resolved too.

:func:`definition_references` lists the places a definition names another definition of the
workspace that its run loads (an interaction, a sub-process, an environment, a form): the check
driver follows them to refuse a definition whose run would load one with errors
(``broken-reference``, :mod:`compiler.check`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from compiler.builtin_interactions import AGENT_ONLY, PROCESS_AGENT_NODE
from compiler.errors import DocPath, Finding, did_you_mean
from compiler.ir import (
    AgentNode,
    InteractionDef,
    InteractionNode,
    PipelineDef,
    ProcessDef,
    ProcessNode,
    TemplateDef,
    ToolNode,
    WorkflowDef,
)
from compiler.lower import has_refs
from compiler.skills import LEARN_PREFIX
from compiler.tools import BUILTIN_INTERACTIONS, PROCESS_CONTROL_TOOLS, ToolCatalogue
from compiler.unavailable_tools import unavailable_tool
from compiler.walk import NodeSite, iter_definitions, iter_nodes
from compiler.workspace import Unit

#: Kinds a `process` node may run: anything that compiles to a process or a pipeline.
RUNNABLE_KINDS = ("process", "pipeline", "template", "workflow")


def check(unit, ws) -> Iterator[Finding]:
    defn = unit.defn
    envs = set(ws.named("environment"))
    if isinstance(defn, InteractionDef):
        yield from _environment(defn.environment, ("environment",), envs)
        return
    if not isinstance(defn, (ProcessDef, PipelineDef)):
        return
    names = _Names(
        interactions=set(ws.named("interaction")) | BUILTIN_INTERACTIONS,
        tools=ws.tools,
        processes=set(ws.named(*RUNNABLE_KINDS)),
        environments=envs,
    )
    for graph, base in iter_definitions(defn):
        yield from _environment(graph.environment, (*base, "environment"), envs)
        for site in iter_nodes(graph, base):
            yield from _node(site, names)


@dataclass(frozen=True, slots=True)
class _Names:
    """What exists, gathered once per unit."""

    interactions: set[str]
    tools: ToolCatalogue
    processes: set[str]
    environments: set[str]


def _node(site: NodeSite, names: _Names) -> Iterator[Finding]:
    node, path = site.node, site.path
    if isinstance(node, (InteractionNode, AgentNode)):
        yield from _environment(node.environment, (*path, "environment"), names.environments)
        if node.interaction is not None and node.interaction not in names.interactions:
            yield Finding("unknown-interaction", (*path, "interaction"), f"no interaction is named `{node.interaction}`",
                          hint=_interaction_hint(node.interaction, names.interactions))
        elif isinstance(node, InteractionNode) and node.interaction in AGENT_ONLY:
            yield Finding("agent-only-interaction", (*path, "interaction"),
                          f"`{node.interaction}` is the agent nodes' contract; an interaction node cannot call it",
                          hint="make the node `type: agent`, or use `sys:GeneralAgent` (with `input: {prompt: ...}`) "
                          "or an interaction definition of your own")
    if isinstance(node, AgentNode) and node.input and node.interaction in (None, PROCESS_AGENT_NODE):
        yield Finding("unused-agent-input", (*path, "input"),
                      f"`input` on agent `{site.id}`, which uses the default `{PROCESS_AGENT_NODE}`: nothing reads it",
                      hint="the agent gets the whole context already; put what it needs in `prompt`, or name the "
                      "`interaction` whose prompts read this input", at_key=True)
    if isinstance(node, ToolNode) and node.tool is not None:
        yield from _tool(node.tool, (*path, "tool"), names.tools)
        if names.tools.agent_only(node.tool):
            yield Finding("agent-only-tool", (*path, "tool"),
                          f"`{node.tool}` works only inside an agent's tool loop; a tool node cannot call it",
                          hint="make the node `type: agent` with the tool in its `tools:`")
    if isinstance(node, AgentNode):
        for i, spec in enumerate(node.tools):
            name = spec.lstrip("+-")
            if name in PROCESS_CONTROL_TOOLS:  # the authoring pass says why it may not be used
                continue
            if name.startswith(LEARN_PREFIX):  # a skill: the skills pass resolves it
                continue
            yield from _tool(name, (*path, "tools", i), names.tools)
    if isinstance(node, ProcessNode):
        yield from _process(node, path, names.processes)


def _interaction_hint(name: str, known: set[str]) -> str:
    if not name.startswith("sys:"):
        return _hint(name, known, what="interactions")
    builtins = sorted(n for n in known if n.startswith("sys:"))
    close = did_you_mean(name, builtins)
    if close:
        return close
    shown = ", ".join(f"`{n}`" + (" (agent nodes)" if n in AGENT_ONLY else "") for n in builtins)
    return (f"the built-in interactions are {shown}; other `sys:` interactions belong to the Vertesia platform: "
            "write an `interaction` definition of your own")


def _tool(name: str, path: tuple, tools: ToolCatalogue) -> Iterator[Finding]:
    if name not in tools and (refused := unavailable_tool(name, path)) is not None:
        yield refused
    elif name not in tools:
        yield Finding("unknown-tool", path, f"no tool is named `{name}`",
                      hint=_hint(name, tools.names(), what="tools")
                      + " (tools come from the built-ins, `tools/*.py`, `tools/manifest.yaml` and the MCP servers' "
                        "`tools/servers.lock.json`)" + tools.unknown_hint(name))


def _process(node: ProcessNode, path: tuple, processes: set[str]) -> Iterator[Finding]:
    if node.process_definition is not None:
        return  # the child is inline; `process` is then only a display id (`tmp:...`)
    if node.process is None:
        yield Finding("missing-field", path, "a process node needs `process` (a definition name) or `process_definition`",
                      hint="name a definition with `process:`, or write the child inline under `process_definition:`",
                      at_key=True)
    elif node.process not in processes:
        yield Finding("unknown-process", (*path, "process"), f"no process, pipeline, template or workflow is named `{node.process}`",
                      hint=_hint(node.process, processes, what="definitions"))


#: Beyond this many, a hint lists the first few names and how many more exist.
HINT_LIMIT = 8


def _hint(word: str, choices: Iterable[str], *, what: str) -> str:
    """"did you mean" when a name is close; otherwise what exists (a workspace can be large)."""
    options = sorted(set(choices))
    close = did_you_mean(word, options)
    if close:
        return close
    if not options:
        return f"there are no {what}"
    shown = ", ".join(f"`{o}`" for o in options[:HINT_LIMIT])
    more = f" and {len(options) - HINT_LIMIT} more" if len(options) > HINT_LIMIT else ""
    return f"{what} are: {shown}{more}"


def _environment(name: str | None, path: tuple, envs: Iterable[str]) -> Iterator[Finding]:
    if name is not None and name not in envs:
        yield Finding("unknown-environment", path, f"no environment is named `{name}`",
                      hint=_hint(name, envs, what="environments"))


def definition_references(unit, ws) -> Iterator[tuple[DocPath, str, Unit]]:
    """Each place ``unit`` names another definition of the workspace that its run loads:
    (where the name is written, the kind of thing named, the named unit), in document order.

    Left out: names that resolve to nothing (the passes above report those), the built-in
    ``sys:`` interactions, a sub-process pinned to a published version (``process_version``: the
    run loads the stored version, checked when it was published) and a workflow's interaction
    named by a ``${…}`` expression (known only at run time)."""
    defn = unit.defn
    named = _Lookup(ws)
    if isinstance(defn, InteractionDef):
        yield from named.at(("environment",), "environment", defn.environment)
    elif isinstance(defn, (ProcessDef, PipelineDef)):
        for graph, base in iter_definitions(defn):
            yield from named.at((*base, "environment"), "environment", graph.environment)
            for site in iter_nodes(graph, base):
                node, path = site.node, site.path
                if isinstance(node, (InteractionNode, AgentNode)):
                    yield from named.at((*path, "interaction"), "interaction", node.interaction)
                    yield from named.at((*path, "environment"), "environment", node.environment)
                elif isinstance(node, ProcessNode) and node.process_definition is None and node.process_version is None:
                    yield from named.at((*path, "process"), "process", node.process)
    elif isinstance(defn, TemplateDef):
        yield from named.at(("input_form",), "form", defn.input_form)
        for i, template_step in enumerate(defn.steps):
            yield from named.at(("steps", i, "output_form"), "form", template_step.output_form)
            yield from named.at(("steps", i, "environment"), "environment", template_step.environment)
    elif isinstance(defn, WorkflowDef):
        for i, step in enumerate(defn.steps):
            if step.type == "workflow":
                yield from named.at(("steps", i, "name"), "process", step.name)
            elif step.name == "executeInteraction":
                interaction = step.params.get("interaction")
                if isinstance(interaction, str) and not has_refs(interaction):
                    yield from named.at(("steps", i, "params", "interaction"), "interaction", interaction)


#: The kinds of definition a reference of each sort may name.
_REFERENCED_KINDS: dict[str, tuple[str, ...]] = {
    "interaction": ("interaction",),
    "process": RUNNABLE_KINDS,
    "environment": ("environment",),
    "form": ("form",),
}


class _Lookup:
    """The workspace's definitions by name, per sort of reference (gathered once per call)."""

    def __init__(self, ws) -> None:
        self._by_sort = {sort: ws.named(*kinds) for sort, kinds in _REFERENCED_KINDS.items()}

    def at(self, path: DocPath, sort: str, name: str | None) -> Iterator[tuple[DocPath, str, Unit]]:
        unit = self._by_sort[sort].get(name) if name is not None else None
        if unit is not None:
            yield path, sort, unit
