"""The `authoring` pass: the seed's rules for a valid definition that can be checked statically.

The seed (processes/authoring, "Rules a valid definition must satisfy") lists the traps that
catch first-time authors. Those a compiler can see without running anything are checked here:

* rule 1 ``input-is-schema`` — ``node.input`` holds values and templates, not JSON Schema;
* rule 2 ``document-field`` — a document field sets both ``format`` and ``editor``;
* rule 3/4 ``control-tool`` — worker agents never get process-control tools;
* rule 9 ``context-too-large`` — ``context.initial`` alone must fit the 64 KB cap;
* rule 11 ``fanout-child`` — foreach/branch bodies are leaf work without routing (nor a
  supervision setting: ``skippable`` and ``metadata.supervisor`` act on the parent);
* rule 12 ``undeclared-write`` / ``write-not-in-schema`` — every write is declared in ``writes``
  and every ``writes`` entry is a property of ``context.schema``;
* rule 13 ``skip-not-skippable`` — a skip override on a node that is not ``skippable``;
* rule 15 ``set-context-envelope`` — ``set_context`` takes ``{updates: {...}}``;
* assignees ``role-assignee`` — ``group:<name>`` or a user id, never ``role:``;
* ``trigger: user`` exits: a node's ``assignee`` names who picks among them, so it is refused on
  a node without any (``assignee-without-choice``); a node cannot let both an agent and a person
  pick its exit (``mixed-triggers``);
* ``bad-value`` — a fixed ``config.context_update`` value, or a literal one of ``set_context``'s
  ``input.updates``, that ``context.schema`` refuses (the run would refuse the write); a
  ``context.initial`` value it refuses (every start would be refused);
* ``foreach-limit`` — a foreach runs at most 10,000 items (100,000 with ``task_runs: node``), at
  most 1000 at a time;
* ``fanout-retry`` — a ``retry`` on a fan-out whose items are task runs of their own (a branch, a
  foreach with ``task_runs: item``): nothing would retry the node as a whole, each item is retried
  by its body's ``retry``; ``task_runs: node`` with a ``process`` body (each sub-process is a flow
  run of its own, so its items cannot run inside the node's one task run);
* ``supervisor-policy`` — ``metadata.supervisor`` (and a process's ``metadata.max_visits``) hold
  only the keys the engine reads, each of its type and within its range
  (:class:`~compiler.ir.SupervisorPolicy`, :class:`~compiler.ir.RunLimits`); the bounds of a
  whole run are refused on a node;
* ``bad-schema`` — every JSON Schema in a definition (a workflow's ``input_schema`` too) is itself valid.

Every node is checked, including foreach/branch children and the nodes of inline child
definitions (each against its own context); paths point into the nesting.
"""

from __future__ import annotations

import json
from functools import lru_cache
from collections.abc import Iterator
from typing import Any

from jsonschema import Draft7Validator
from jsonschema.exceptions import best_match
from pydantic import BaseModel, ValidationError

from compiler.errors import Finding, choices_hint, did_you_mean
from compiler.ir import (
    FOREACH_MAX_CONCURRENCY,
    FOREACH_MAX_ITEMS,
    LEAF_TYPES,
    AgentNode,
    BranchNode,
    CollectSpec,
    ForeachNode,
    HumanTaskNode,
    InteractionDef,
    InteractionNode,
    PipelineDef,
    RUN_WIDE_SUPERVISOR_KEYS,
    ProcessDef,
    RunLimits,
    SupervisorPolicy,
    ToolNode,
    WorkflowDef,
)
from compiler.context_schema import literal_value_error
from compiler.tools import PROCESS_CONTROL_TOOLS
from compiler.result_schema import InteractionResults, interaction_results, node_result_schema, unheld_writes
from compiler.walk import NodeSite, iter_definitions, iter_nodes, written

# Draft 7's meta-schema checks the same structure (type names, the shape of every keyword) as
# 2020-12's about five times faster: 2020-12's $dynamicRef resolution dominates, and a
# 1,000-field context schema took longer to meta-validate than its YAML took to load.
# Keywords new in 2020-12 (prefixItems, $defs, dependentRequired...) are accepted unchecked.
_META_VALIDATOR = Draft7Validator(Draft7Validator.META_SCHEMA)

#: Context serialized larger than this is refused at run time (seed rule 9).
CONTEXT_CAP_BYTES = 64 * 1024
#: JSON Schema's type names: a mapping whose `type` is one of these smells of a schema.
SCHEMA_TYPES = frozenset({"string", "number", "integer", "boolean", "object", "array", "null"})
#: Keys a schema fragment is made of (plus `type`); a value mapping with only these is a schema.
SCHEMA_KEYS = frozenset({
    "properties", "items", "format", "editor", "enum", "description", "required", "title", "default",
    "additionalProperties", "minimum", "maximum", "minLength", "maxLength", "pattern", "minItems",
    "maxItems", "const", "oneOf", "anyOf", "allOf", "$ref", "examples",
})


def check(unit, ws) -> Iterator[Finding]:
    defn = unit.defn
    if isinstance(defn, InteractionDef):
        for field in ("input_schema", "result_schema"):
            yield from _bad_schema(getattr(defn, field), (field,))
        return
    if isinstance(defn, WorkflowDef):  # its run inputs are validated against it
        yield from _bad_schema(defn.input_schema, ("input_schema",))
        return
    if not isinstance(defn, (ProcessDef, PipelineDef)):
        return
    results = interaction_results(ws)  # the folder's, the same for every inline definition
    for graph, base in iter_definitions(defn):
        yield from _context(graph, base)
        if isinstance(graph, ProcessDef):
            metadata = graph.metadata or {}
            yield from _supervisor_policy(metadata.get("supervisor"), (*base, "metadata", "supervisor"))
            if "max_visits" in metadata:
                yield from _policy_value(RunLimits, "max_visits", metadata["max_visits"], (*base, "metadata"))
        for site in iter_nodes(graph, base):
            yield from _node(site, results)


# --------------------------------------------------------------------------------------------
# the definition's context


def _context(graph: ProcessDef | PipelineDef, base: tuple) -> Iterator[Finding]:
    schema = graph.context.schema_
    spath = (*base, "context", "schema")
    yield from _bad_schema(schema, spath)
    yield from _document_fields(schema, spath)
    try:
        size = len(json.dumps(graph.context.initial, default=str).encode("utf-8"))
    except (TypeError, ValueError):  # e.g. circular YAML anchors; nothing sensible to measure
        size = 0
    if size > CONTEXT_CAP_BYTES:
        yield Finding("context-too-large", (*base, "context", "initial"),
                      f"`context.initial` is {size:,} bytes serialized; the context is capped at {CONTEXT_CAP_BYTES:,}",
                      hint="store large payloads as artifacts or documents and keep their ids in the context")
    for key, value in graph.context.initial.items():
        # every run starts from these values: one the schema refuses refuses every start
        problem = literal_value_error(graph.context, key, value)
        if problem is not None:
            message, inner = problem
            yield Finding("bad-value", (*base, "context", "initial", key, *inner), message,
                          hint=f"give `{key}` a value of the declared type, or change its schema")


def _bad_schema(schema: Any, path: tuple) -> Iterator[Finding]:
    """A JSON Schema that is not one: the meta-schema's best complaint, where it applies.

    A context schema of a large definition has hundreds of properties, most of them alike
    (``{type: string}``): each property's schema is judged on its own, once per distinct text,
    and the schema around them without them — the same verdicts, a fraction of the cost."""
    if schema is None:
        return
    props = schema.get("properties") if isinstance(schema, dict) else None
    parts: list[tuple[tuple, Any]] = [((), schema)]
    if isinstance(props, dict) and props and not any(k in json.dumps(schema, default=str) for k in ('"$ref"', '"$defs"')):
        parts = [((), {**schema, "properties": {}})] + [(("properties", name), sub) for name, sub in props.items()]
    for prefix, part in parts:
        problem = _meta_problem(json.dumps(part, sort_keys=True, default=str))
        if problem is not None:
            message, inner = problem
            yield Finding("bad-schema", (*path, *prefix, *inner), f"invalid JSON Schema: {message}",
                          hint="change the keyword the message names to what JSON Schema draft 2020-12 allows there (https://json-schema.org)")
            if not prefix:
                return  # the schema's own shape is wrong: its properties are beside the point


@lru_cache(maxsize=4096)
def _meta_problem(schema_text: str) -> tuple[str, tuple] | None:
    err = best_match(_META_VALIDATOR.iter_errors(json.loads(schema_text)))
    return None if err is None else (err.message, tuple(err.absolute_path))


def _document_fields(schema: Any, path: tuple) -> Iterator[Finding]:
    """Rule 2: `format: document` and `editor: document` go together, at any depth."""
    if not isinstance(schema, dict):
        return
    has_format = schema.get("format") == "document"
    has_editor = schema.get("editor") == "document"
    if has_format and not has_editor:
        yield Finding("document-field", (*path, "format"), "a document field without `editor: document`",
                      hint="add `editor: document`; without it the start form shows a raw text box instead of a document picker")
    elif has_editor and not has_format:
        yield Finding("document-field", (*path, "editor"), "a document field without `format: document`",
                      hint="add `format: document` so the value is validated as a document reference")
    props = schema.get("properties")
    if isinstance(props, dict):
        for name, sub in props.items():
            yield from _document_fields(sub, (*path, "properties", name))
    items = schema.get("items")
    if isinstance(items, dict):
        yield from _document_fields(items, (*path, "items"))
    if isinstance(schema.get("additionalProperties"), dict):
        yield from _document_fields(schema["additionalProperties"], (*path, "additionalProperties"))


# --------------------------------------------------------------------------------------------
# nodes


def _node(site: NodeSite, results: InteractionResults) -> Iterator[Finding]:
    yield from _input_is_schema(site)
    yield from _undeclared_writes(site)
    yield from _fixed_update_values(site)
    # a fan-out child's `writes` shape its per-item output, which the parent collects into its
    # own `collect` field; without `collect` they land in the context directly
    if site.parent is None or getattr(site.parent.node, "collect", None) is None:
        yield from _writes_in_schema(site)
    else:
        yield from _writes_held(site, results)
    yield from _assignees(site)
    yield from _fanout(site)
    yield from _set_context(site)
    yield from _skip(site)
    meta = site.node.metadata
    # a pipeline's node, or a fan-out child, with a policy is refused as a whole (graph_shape, _fanout)
    if meta is not None and site.parent is None and isinstance(site.owner, ProcessDef):
        yield from _supervisor_policy(meta.supervisor, (*site.path, "metadata", "supervisor"), on_node=True)
    yield from _control_tools(site)


def _fixed_update_values(site: NodeSite) -> Iterator[Finding]:
    """A fixed ``config.context_update`` value, or one of ``set_context``'s ``input.updates``, must
    fit its field's schema: the run would refuse the write (only literal values are checked; a
    value holding a template is known at run time)."""
    node = site.node
    if not isinstance(node, ToolNode) or site.parent is not None:
        return
    fixed: list[tuple[dict[str, Any], tuple]] = []
    if node.config is not None and node.config.context_update:
        fixed.append((node.config.context_update, ("config", "context_update")))
    updates = (node.input or {}).get("updates") if node.tool == "set_context" else None
    if isinstance(updates, dict):
        fixed.append((updates, ("input", "updates")))
    for values, at in fixed:
        for key, value in values.items():
            problem = literal_value_error(site.owner.context, key, value)
            if problem is not None:
                message, inner = problem
                yield Finding("bad-value", (*site.path, *at, key, *inner), message,
                              hint=f"give `{key}` a value of the declared type, or change its schema")


def looks_like_schema(value: Any) -> bool:
    """A JSON-schema fragment such as ``{type: string, editor: document}``, not a value."""
    if not isinstance(value, dict) or "type" not in value:
        return False
    kind = value["type"]
    kinds = kind if isinstance(kind, list) else [kind]
    if not kinds or not all(isinstance(k, str) and k in SCHEMA_TYPES for k in kinds):
        return False
    return set(value) - {"type"} <= SCHEMA_KEYS


def _input_is_schema(site: NodeSite) -> Iterator[Finding]:
    """Rule 1: `node.input` is a runtime mapping, not a schema."""
    values = getattr(site.node, "input", None)
    if not isinstance(values, dict):
        return
    for key, value in values.items():
        if looks_like_schema(value):
            yield Finding("input-is-schema", (*site.path, "input", key),
                          f"`input.{key}` is a JSON-schema fragment, not a value",
                          hint=f'use a template such as "{{{{{key}}}}}"; a schema belongs on the interaction\'s `input_schema`')


def _undeclared_writes(site: NodeSite) -> Iterator[Finding]:
    """Rule 12: every field a node puts into the context is listed in its `writes`."""
    node, path = site.node, site.path
    declared = set(node.writes)
    targets: list[tuple[str, tuple, bool]] = []  # (field, where it is written, point at the key)
    if isinstance(node, ToolNode):
        if node.config and node.config.context_update:
            targets += [(k, (*path, "config", "context_update", k), True) for k in node.config.context_update]
        updates = (node.input or {}).get("updates") if node.tool == "set_context" else None
        if isinstance(updates, dict):
            targets += [(k, (*path, "input", "updates", k), True) for k in updates]
        if node.output:
            targets.append((node.output, (*path, "output"), False))
    if isinstance(node, (ForeachNode, BranchNode)) and node.collect is not None:
        if isinstance(node.collect, CollectSpec):
            targets.append((node.collect.into, (*path, "collect", "into"), False))
        else:
            targets.append((node.collect, (*path, "collect"), False))
    for field, where, at_key in targets:
        if field not in declared:
            yield Finding("undeclared-write", where, f"`{field}` is written to the context but not declared in `writes`",
                          hint=f"add `{field}` to this node's `writes` (undeclared writes are rejected at run time)",
                          at_key=at_key)


def _writes_in_schema(site: NodeSite) -> Iterator[Finding]:
    """Every `writes` entry is a property of `context.schema`.

    Also for an open schema (no ``properties``, or no ``additionalProperties: false``): an
    agent's result schema is derived from the declared properties of its writes, so an
    undeclared write would be dropped at run time without a word, and no other check could hold
    the value to a type.
    """
    schema = site.owner.context.schema_
    if not isinstance(schema, dict):
        return
    props = schema.get("properties")
    if not isinstance(props, dict):
        props = {}
    closed = schema.get("additionalProperties") is False
    for i, field in enumerate(site.node.writes):
        if field not in props:
            hint = did_you_mean(field, props) if props else None
            if hint is None:
                hint = (f"add `{field}` to `context.schema.properties`" if closed
                        else f"add `{field}: {{type: string}}` under context.schema.properties (with its real type)")
            yield Finding("write-not-in-schema", (*site.path, "writes", i), f"`{field}` is not a property of `context.schema`",
                          hint=hint)


def _writes_held(site: NodeSite, results: InteractionResults) -> Iterator[Finding]:
    """A collected fan-out body's ``writes`` are fields its result can hold: declared by
    ``context.schema`` or by its interaction's own ``result_schema``. The check asks the function
    that makes the Plan's result schema (:func:`compiler.result_schema.node_result_schema`), so a
    write it passes is one the runtime keeps; any other would be dropped from every answer."""
    node = site.node
    if not isinstance(node, (AgentNode, InteractionNode)) or not node.writes:
        return
    schema = node_result_schema(node, site.owner.context.schema_ or {}, results=results, collected=True)
    own = f"interaction `{node.interaction}`'s `result_schema`" if isinstance(node, InteractionNode) else None
    for field in unheld_writes(schema, list(node.writes)):
        i = list(node.writes).index(field)
        undeclared = (f"neither `context.schema` nor {own} declares it" if own
                      else "`context.schema`, which types an agent's result, does not declare it")
        hint = (f"declare `{field}` in {own}" if own else f"declare `{field}` in context.schema.properties") \
            + " with its type, or drop it from `writes`"
        yield Finding("write-not-held", (*site.path, "writes", i),
                      f"`{field}` is written to each item's result, but {undeclared}: the model's answer would lose it",
                      hint=hint)


def _assignees(site: NodeSite) -> Iterator[Finding]:
    """Assignees are `group:<name>` or a user id; `role:` is not supported."""
    node = site.node
    if isinstance(node, HumanTaskNode):
        yield from _assignee(node.task.assignee, (*site.path, "task", "assignee"))
    elif isinstance(node, AgentNode):
        yield from _assignee(node.ask_user, (*site.path, "ask_user"))
    triggers = {t.trigger for t in node.transitions}
    if node.assignee is not None:
        yield from _assignee(node.assignee, (*site.path, "assignee"))
        if "user" not in triggers:
            where = "`task.assignee`" if isinstance(node, HumanTaskNode) else "`ask_user`" if isinstance(node, AgentNode) \
                else None
            yield Finding("assignee-without-choice", (*site.path, "assignee"),
                          f"`assignee` on `{site.id}`, which has no `trigger: user` transition: nobody is asked anything",
                          hint="`assignee` names who picks among the node's `trigger: user` exits; add such exits or "
                          "remove it" + (f" (the task's own assignee is {where})" if where else ""), at_key=True)
    if {"agent", "user"} <= triggers:
        i = next(i for i, t in enumerate(node.transitions) if t.trigger == "user")
        yield Finding("mixed-triggers", (*site.path, "transitions", i, "trigger"),
                      f"`{site.id}` has both `trigger: agent` and `trigger: user` exits: only one of them can pick",
                      hint="let the agent pick (`trigger: agent`, `_next_node`) or a person (`trigger: user`), or route "
                      "the agent's choice to a node whose exits a person picks")


def _assignee(value: str | None, path: tuple) -> Iterator[Finding]:
    if not value:
        return
    if value.startswith("role:"):
        name = value[len("role:"):].strip() or "<name>"
        yield Finding("role-assignee", path, f"`{value}`: `role:` assignees are not supported",
                      hint=f"use `group:{name}`, a user id, or leave it unset for anyone")
    elif value.startswith("group:") and not value[len("group:"):].strip():
        yield Finding("role-assignee", path, "`group:` names no group", hint="write `group:<name>`, e.g. `group:legal`")


def _fanout(site: NodeSite) -> Iterator[Finding]:
    """Rule 11: fan-out bodies are leaf work and own no routing; foreach limits."""
    node, path = site.node, site.path
    if site.parent is not None:  # a fan-out child
        parent = site.parent.node.type
        if node.type not in LEAF_TYPES:
            yield Finding("fanout-child", (*path, "type"), f"a {parent} body cannot be a `{node.type}` node",
                          hint="use a `tool`, `interaction`, `agent` or `process` body; put routing on the "
                          "parent and nested work in a sub-process")
        for field in ("transitions", "needs", "when"):
            if written(node, field):
                yield Finding("fanout-child", (*path, field), f"a {parent} body does not route: `{field}` is not allowed here",
                              hint=f"move `{field}` to the parent `{site.id}` node", at_key=True)
        # a supervisor or an operator skips, retries or steers the node a run is at: the parent
        supervision = [("skippable", (*path, "skippable"))] if node.skippable else []
        if node.metadata is not None and node.metadata.supervisor is not None:
            supervision.append(("metadata.supervisor", (*path, "metadata", "supervisor")))
        for setting, where in supervision:
            yield Finding("fanout-child", where,
                          f"`{setting}` on a {parent} body: supervision acts on the `{site.id}` node, never on one of its items",
                          hint=f"move `{setting}` to the parent `{site.id}` node", at_key=True)
    if isinstance(node, BranchNode):
        seen: dict[str, int] = {}
        for i, arm in enumerate(node.branches):
            if arm.id in seen:
                yield Finding("bad-value", (*path, "branches", i, "id"), f"branch id `{arm.id}` is used twice",
                              hint=f"branch ids are unique within the node (first used by branch {seen[arm.id]})")
            seen.setdefault(arm.id, i)
    if isinstance(node, ForeachNode):
        yield from _foreach_limits(site, node)
    if isinstance(node, (ForeachNode, BranchNode)):
        yield from _fanout_task_runs(site, node)


def _foreach_limits(site: NodeSite, node: ForeachNode) -> Iterator[Finding]:
    cap = node.max_concurrency
    if cap is not None and not 1 <= cap <= FOREACH_MAX_CONCURRENCY:
        yield Finding("foreach-limit", (*site.path, "max_concurrency"),
                      f"max_concurrency {cap} is outside 1..{FOREACH_MAX_CONCURRENCY}",
                      hint=f"leave it unset to launch every item at once, or pick a cap between 1 and {FOREACH_MAX_CONCURRENCY}")
    prop = _schema_at(site.owner.context.schema_, node.foreach)
    max_items = prop.get("maxItems") if isinstance(prop, dict) else None
    limit = FOREACH_MAX_ITEMS[node.task_runs]
    if isinstance(max_items, int) and not isinstance(max_items, bool) and max_items > limit:
        more = "" if node.task_runs == "node" else \
            f", or add `task_runs: node` (items inside one task run: up to {FOREACH_MAX_ITEMS['node']:,})"
        yield Finding("foreach-limit", (*site.path, "foreach"),
                      f"`{node.foreach}` may hold {max_items} items (maxItems); this foreach runs at most {limit:,}",
                      hint=f"set `maxItems: {limit}` or less on the field, or split the collection{more}")


def _fanout_task_runs(site: NodeSite, node: ForeachNode | BranchNode) -> Iterator[Finding]:
    """A fan-out's retry and task runs: what would be accepted and not done is refused."""
    per_node = isinstance(node, ForeachNode) and node.task_runs == "node"
    if written(node, "retry") and not per_node:
        what = "a branch's arms" if isinstance(node, BranchNode) else "this foreach's items"
        yield Finding("fanout-retry", (*site.path, "retry"),
                      f"`retry` on `{site.id}` would not be used: {what} are Prefect task runs of their own, "
                      "retried by their body's `retry`",
                      hint="move `retry` into the body (`node:`" + (" of each branch)" if isinstance(node, BranchNode)
                                                                     else ") to retry each item, or set `task_runs: node` "
                                                                     "to retry the node's one task run"),
                      at_key=True)
    if per_node and isinstance(node, ForeachNode) and node.node.type == "process":
        yield Finding("fanout-retry", (*site.path, "task_runs"),
                      "`task_runs: node` cannot hold a `process` body: each sub-process is a Prefect flow run of its own",
                      hint="remove `task_runs: node` (each item is then a task run starting its sub-process), "
                      "or call a tool, interaction or agent per item", at_key=True)


def _schema_at(schema: Any, dotted: str) -> Any:
    """The schema of the context field at a dotted path (``order.lines``), or None."""
    for part in dotted.split("."):
        props = schema.get("properties") if isinstance(schema, dict) else None
        if not isinstance(props, dict) or part not in props:
            return None
        schema = props[part]
    return schema


def _set_context(site: NodeSite) -> Iterator[Finding]:
    """Rule 15: `set_context` takes `{updates: {...}}` and nothing else at the top level."""
    node = site.node
    if not (isinstance(node, ToolNode) and node.tool == "set_context"):
        return
    values = node.input or {}
    stray = [key for key in values if key != "updates"]
    for key in stray:
        yield Finding("set-context-envelope", (*site.path, "input", key),
                      f"`{key}` is passed to `set_context` outside the `updates` envelope",
                      hint=f"move it under `input.updates` (`updates: {{{key}: ...}}`)", at_key=True)
    # stray fields already say where the envelope is missing; say it once more only when
    # there is nothing else to point at (no input, or `updates` that is not a mapping)
    if "updates" in values and not isinstance(values["updates"], dict):
        yield Finding("set-context-envelope", (*site.path, "input", "updates"), "`updates` must be a mapping of fields to values",
                      hint="write `input: {updates: {field: value}}` and list each field in `writes`")
    elif "updates" not in values and not stray:
        yield Finding("set-context-envelope", (*site.path, "input") if node.input is not None else site.path,
                      "`set_context` needs an `updates` mapping in its `input`",
                      hint="write `input: {updates: {field: value}}` and list each field in `writes`",
                      at_key=node.input is None)


def _supervisor_policy(policy: Any, path: tuple, *, on_node: bool = False) -> Iterator[Finding]:
    """A supervisor policy the engine would not read is refused, not ignored: unknown keys
    (a typo would silently keep the default), values of the wrong type or out of range, and on a
    node the bounds that count over the whole run."""
    if policy is None:
        return
    keys = list(SupervisorPolicy.model_fields)
    if not isinstance(policy, dict):
        yield Finding("supervisor-policy", path, "`metadata.supervisor` must be a mapping",
                      hint="write `supervisor: {allow_transition_override: true}` (or " + ", ".join(keys[1:]) + ")")
        return
    for key, value in policy.items():
        if key not in SupervisorPolicy.model_fields:
            yield Finding("supervisor-policy", (*path, key), f"unknown supervisor policy key `{key}`",
                          hint=choices_hint(str(key), keys, what="the keys"), at_key=True)
        elif on_node and key in RUN_WIDE_SUPERVISOR_KEYS:
            yield Finding("supervisor-policy", (*path, key), f"`{key}` bounds the whole run, not one node",
                          hint=f"set it in the process's `metadata.supervisor.{key}`", at_key=True)
        else:
            yield from _policy_value(SupervisorPolicy, key, value, path)


def _policy_value(model: type[BaseModel], key: str, value: Any, path: tuple) -> Iterator[Finding]:
    """``value`` of the policy key ``key`` (a field of ``model``) when its type or range is wrong."""
    try:
        model.model_validate({key: value})
    except ValidationError:
        field = model.model_fields[key]
        yield Finding("supervisor-policy", (*path, key), f"`{key}` must be {_expected(field)}",
                      hint=f"{key} defaults to {json.dumps(field.default)}")


def _expected(field: Any) -> str:
    """What a policy field takes, in words."""
    if field.annotation is bool:
        return "true or false"
    if field.annotation is int:
        low = next(m.ge for m in field.metadata if hasattr(m, "ge"))
        high = next(m.le for m in field.metadata if hasattr(m, "le"))
        return f"a whole number from {low} to {high}"
    return "a model or environment name"


def _skip(site: NodeSite) -> Iterator[Finding]:
    """Rule 13: a supervisor skip override on a node that does not say it may be skipped."""
    meta = site.node.metadata
    supervisor = meta.supervisor if meta is not None else None
    if isinstance(supervisor, dict) and supervisor.get("allow_skip") is True and not site.node.skippable:
        yield Finding("skip-not-skippable", (*site.path, "metadata", "supervisor", "allow_skip"),
                      f"`allow_skip` on `{site.id}`, which is not `skippable: true`",
                      hint="set `skippable: true` on the node if a supervisor may skip it, or remove `allow_skip`")


def _control_tools(site: NodeSite) -> Iterator[Finding]:
    """Rules 3-4: worker agents return structured output and never get process-control tools."""
    if not isinstance(site.node, AgentNode):
        return
    for i, spec in enumerate(site.node.tools):
        name = spec.lstrip("+-")
        if not spec.startswith("-") and name in PROCESS_CONTROL_TOOLS:  # `-x` removing one is harmless
            yield Finding("control-tool", (*site.path, "tools", i), f"`{name}` is a process-control tool; agents never get it",
                          hint="return the values through `writes` and route with `transitions`; "
                          "process-control tools belong to the supervisor")
