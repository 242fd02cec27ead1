"""Checks of the kinds that are not run as written: templates, workflows, forms, interactions.

Templates and workflows are lowered to pipelines (:mod:`compiler.lower`). The lowering trusts
its input, so everything that would make it fail or produce a broken pipeline is checked here,
on the *original* document, so that diagnostics point at what the author wrote:

* template — forms exist (``unknown-form``), ``tools_allowed`` names registered tools and no
  process-control tool (``unknown-tool``, ``control-tool``), a step ``environment`` exists
  (``unknown-environment``), ``parent`` names a step (``unknown-target``), step
  keys and output keys are unique and ``input`` is not used as an output key (``bad-value``),
  parent links have no cycle (``cycle``), a prompt reads no optional form field unguarded
  (``maybe-unset``, as the definite-assignment pass says of the lowered pipeline);
* workflow — a var or step output named like an ``input_schema`` property is of a type it takes
  (a literal default ``bad-value``, a computed var or a step's result ``write-type``); every
  ``${var}`` names a var, an input property or the output of an earlier,
  awaited step (``maybe-unset``; one set under a condition is read under the same condition only
  while no step writes a var that condition reads), condition operators are known (``guard-invalid``) and their
  operands valid (``bad-value``: ``$regexp`` compiles, ``$in``/``$nin`` take a list), explicit
  step ids are unique (``bad-value``), activities are registered tools (``unknown-tool``) that
  a step can run (not an agent-only workstream tool, ``agent-only-tool``) called with the
  parameters the built-in ones take (``tool-params``, ``compiler.tools.BUILTIN_TOOL_PARAMS``; the
  embedding activities' values too, :mod:`compiler.activity_values`) and, for every tool whose
  signature the catalogue knows (built-ins, :mod:`compiler.builtin_signatures`; Python tools),
  values of the types its parameters take — a literal, exactly one ``${name}`` of a type the
  workflow declares, or text around references (a string) (``tool-params``), and not
  one of the documented activities Ergon does not run yet nor ``set_context`` (``dsl-unsupported``), child steps name
  a workflow, process or pipeline (``unknown-process``) and give it the inputs it takes — values
  of types its fields can take (``write-type``), every required input it has no value for
  (``missing-field``) —, ``fetch`` has the shape
  :mod:`flows.runtime.dsl` runs (``bad-value``; another type or a ``source`` is
  ``dsl-unsupported``) and ``projection`` lists paths under ``$include`` / ``$exclude``
  (``bad-value``); ``${fetched}`` is visible in the params of a step with a ``fetch``; a
  ``{{ }}`` written in a param parses (``template-syntax``) and reads visible names
  (``maybe-unset``), except in a ``generateText`` ``prompt``, rendered over ``data`` alone: it
  reads ``data``'s keys (``unknown-field``) and holds no ``${}`` (``bad-value``); a ``${}`` of a
  literal var nothing replaces reads only fields and items its value has (``unknown-field``);
* form — group names and field names within a group are unique, a ``select`` has options
  (``bad-value``);
* interaction — it has prompt segments and its ``test_data`` matches its ``input_schema``
  (``bad-value``); its segments are the ``prompts`` pass's.

A lowered pipeline of a definition with no findings here passes every other pass unchanged
(asserted in ``tests/compiler/test_lower.py``), which is why the other passes do not look at
templates and workflows.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from compiler import activity_values
from compiler.errors import Finding, choices_hint
from compiler.forms import field_schema, form_schema
from compiler.ir import FormDef, FormField, InteractionDef, PipelineDef, ProcessDef, TemplateDef, WorkflowDef, WorkflowStep
from compiler.passes.definite_assignment import nested_findings
from compiler.passes.templates import located, name_line
from compiler.templates import TemplateSite, analyse, is_template, shown_path, syntax_error
from compiler import guards as jl
from compiler.lower import (
    VARS_NODE,
    condition_clauses,
    lower_condition,
    has_refs,
    iter_refs,
    lower_workflow,
    ref_root,
    step_node,
    to_jinja,
    verbatim_params,
    workflow_inputs,
)
from compiler.passes.tool_calls import _argument_problem
from compiler.tool_signatures import UNKNOWN_MEMBERS, json_type
from compiler.passes.template_values import filter_problem, member_problem
from compiler.passes.write_types import (
    _REFERENCE,
    _TEXT,
    _field_schema,
    _fits,
    _kinds,
    _may_not_fit,
    _named_kinds,
    _one_expression,
    _path_schema,
    _shown,
    _strip,
    _sub_process,
)
from compiler.tool_signatures import Signature
from compiler.skills import LEARN_PREFIX
from compiler.tools import PROCESS_CONTROL_TOOLS
from compiler.unavailable_tools import unavailable_tool


def check(unit, ws) -> Iterator[Finding]:
    defn = unit.defn
    if isinstance(defn, TemplateDef):
        yield from _template(unit, defn, ws)
    elif isinstance(defn, WorkflowDef):
        yield from _workflow(defn, ws)
        yield from _optional_members(unit, defn, ws)
    elif isinstance(defn, FormDef):
        yield from _form(defn)
    elif isinstance(defn, InteractionDef):
        yield from _interaction(defn)


# --------------------------------------------------------------------------------------------
# template


def _template(unit, defn: TemplateDef, ws) -> Iterator[Finding]:
    forms = ws.named("form")
    environments = ws.named("environment")

    def form_ref(name: str, path: tuple) -> Iterator[Finding]:
        if name not in forms:
            yield Finding("unknown-form", path, f"no form named `{name}`", hint=choices_hint(name, forms, what="defined forms"))

    yield from form_ref(defn.input_form, ("input_form",))
    keys: dict[str, int] = {}
    outputs: dict[str, int] = {}
    for i, step in enumerate(defn.steps):
        yield from form_ref(step.output_form, ("steps", i, "output_form"))
        for j, spec in enumerate(step.tools_allowed):
            name = spec.lstrip("+-")
            if name in PROCESS_CONTROL_TOOLS:
                yield Finding("control-tool", ("steps", i, "tools_allowed", j), f"`{name}` is a process-control tool; agents never get it",
                              hint=f"remove `{spec}` from `tools_allowed`: agents return their output as structured "
                              "data instead of calling control tools")
            elif name.startswith(LEARN_PREFIX):
                pass  # a skill: the skills pass resolves it
            elif name not in ws.tools and (refused := unavailable_tool(name, ("steps", i, "tools_allowed", j))) is not None:
                yield refused
            elif name not in ws.tools:
                yield Finding("unknown-tool", ("steps", i, "tools_allowed", j), f"no tool is named `{name}`",
                              hint=choices_hint(name, ws.tools.names(), what="registered tools") + ws.tools.unknown_hint(name))
        if step.environment is not None and step.environment not in environments:
            yield Finding("unknown-environment", ("steps", i, "environment"), f"no environment named `{step.environment}`",
                          hint=choices_hint(step.environment, environments, what="defined environments"))
        if step.key in keys:
            yield Finding("bad-value", ("steps", i, "key"), f"step key `{step.key}` is already used by step {keys[step.key] + 1}",
                          hint=f"rename this step's `key` (e.g. `{step.key}_2`): step keys are unique within a template")
        else:
            keys[step.key] = i
        if step.output_key == "input":
            yield Finding("bad-value", ("steps", i, "output_key"), "`input` is the template's input and cannot be a step output",
                          hint=f"write another name, e.g. `output_key: {step.key}`")
        elif step.output_key in outputs:
            yield Finding("bad-value", ("steps", i, "output_key"),
                          f"output_key `{step.output_key}` is already written by step `{defn.steps[outputs[step.output_key]].key}`",
                          hint=f"give this step an `output_key` of its own, e.g. `output_key: {step.key}`")
        else:
            outputs[step.output_key] = i
    for i, step in enumerate(defn.steps):
        yield from _step_body(defn, i, step, forms)
        if step.parent is not None and step.parent not in keys:
            yield Finding("unknown-target", ("steps", i, "parent"), f"no step with key `{step.parent}`",
                          hint=choices_hint(step.parent, keys, what="step keys"))
    yield from _parent_cycles(defn, keys)
    yield from _template_nested_reads(unit, defn, forms)
    yield from _submission_update(defn, forms)


def _step_body(defn: TemplateDef, i: int, step: Any, forms) -> Iterator[Finding]:
    """An LLM step has a ``prompt``, a step without a model a ``mapping`` onto its output form."""
    where = ("steps", i)
    if (step.prompt is None) == (step.mapping is None):
        yield Finding("bad-value", where, f"step `{step.key}` needs exactly one of `prompt` (an LLM step) or "
                      "`mapping` (a step without a model)", hint="write `prompt:` or `mapping:`, not both")
        return
    if step.mapping is None:
        return
    for key in ("tools_allowed", "model", "environment"):
        if getattr(step, key):
            yield Finding("bad-value", (*where, key), f"`{key}` has no effect on a mapping step (it calls no model)",
                          hint=f"remove `{key}`, or make the step an LLM step with `prompt`")
    unit = forms.get(step.output_form)
    if unit is None or not isinstance(unit.defn, FormDef):
        return
    groups = {g.name: g for g in unit.defn.groups}
    for key in step.mapping:
        group_name, _, field_name = key.partition(".")
        group = groups.get(group_name)
        path = (*where, "mapping", key)
        if group is None:
            yield Finding("unknown-field", path, f"form `{unit.defn.name}` has no group `{group_name}`",
                          hint=choices_hint(group_name, groups, what="its groups"))
        elif group.repeat and field_name:
            yield Finding("bad-value", path, f"`{group_name}` repeats: map the whole group to an expression "
                          "giving its entries", hint=f"write `{group_name}: \"{{{{ input.{group_name} }}}}\"`")
        elif not group.repeat and not field_name:
            yield Finding("bad-value", path, f"`{group_name}` does not repeat: map each of its fields",
                          hint=f"write `{group_name}.<field>: \"{{{{ … }}}}\"`")
        elif field_name and field_name not in {f.name for f in group.fields}:
            yield Finding("unknown-field", path, f"group `{group_name}` has no field `{field_name}`",
                          hint=choices_hint(field_name, [f.name for f in group.fields], what="its fields"))
    mapped = {k.partition(".")[0] for k in step.mapping}
    for group in unit.defn.groups:
        if group.repeat or not (group.required or group.name in mapped):
            if group.repeat and group.required and group.name not in mapped:
                yield Finding("missing-field", (*where, "mapping"), f"the mapping leaves out the required group "
                              f"`{group.name}` of form `{unit.defn.name}`", hint=f"map `{group.name}` to its entries")
            continue
        missing = [f.name for f in group.fields if f.required and f"{group.name}.{f.name}" not in step.mapping]
        if missing:
            yield Finding("missing-field", (*where, "mapping"), f"the mapping leaves out required field(s) "
                          f"{', '.join(f'`{group.name}.{m}`' for m in missing)} of form `{unit.defn.name}`",
                          hint="map every required field of the groups it writes")


def _submission_update(defn: TemplateDef, forms) -> Iterator[Finding]:
    """``submission_update`` writes the final steps' values into the input submission's items of
    the same group and field: a final step whose form shares none would write nothing, and a
    shared field whose values the input's field does not take (another type, options it lacks)
    would fail the run at its end."""
    if defn.output_type != "submission_update":
        return
    def fields(name: str) -> dict[tuple[str, str, bool], FormField] | None:
        unit = forms.get(name)
        if unit is None or not isinstance(unit.defn, FormDef):
            return None
        return {(g.name, f.name, g.repeat): f for g in unit.defn.groups for f in g.fields}

    target = fields(defn.input_form)
    parents = {s.parent for s in defn.steps}
    for i, step in enumerate(defn.steps):
        mine = fields(step.output_form)
        if step.key in parents or target is None or mine is None:
            continue
        shared = mine.keys() & target.keys()
        if not shared:
            yield Finding("output-type", ("steps", i, "output_form"),
                          f"output_type `submission_update` writes the final step's values into the input submission, "
                          f"but form `{step.output_form}` has no field of the input form `{defn.input_form}`",
                          hint="give the final step an output form sharing groups and fields with the input form, "
                               "or use output_type `artifact` or `report`")
        for key in sorted(shared):
            if not _fits_into(mine[key], target[key]):
                yield Finding("output-type", ("steps", i, "output_form"),
                              f"output_type `submission_update` writes `{key[0]}.{key[1]}` of form `{step.output_form}` "
                              f"({_kind(mine[key])}) into the input form's `{key[0]}.{key[1]}` ({_kind(target[key])}), "
                              "which does not take every such value",
                              hint="give both fields the same type (and the input's options the output's)")


def _fits_into(out: FormField, into: FormField) -> bool:
    """Whether every value of form field ``out`` is a valid value of ``into``."""
    a, b = field_schema(out), field_schema(into)
    if a.get("type") != b.get("type") and not (a.get("type") == "integer" and b.get("type") == "number"):
        return False
    if "enum" in b and not set(a.get("enum") or [None]) <= set(b["enum"]):
        return False
    return True


def _kind(f: FormField) -> str:
    return f.type + (f" of {', '.join(f.options)}" if f.type == "select" and f.options else "")


def _template_nested_reads(unit, defn: TemplateDef, forms) -> Iterator[Finding]:
    """Every step's templates (its prompt, each mapping expression) against the lowered context
    (``input`` + the steps' outputs), as a process's templates are checked: they parse (unknown
    filters included), read only ``input`` and the outputs of the steps before them (their
    parent chain: the steps a pipeline runs first), only fields the forms have, and guard the
    optional ones (``maybe-unset``)."""
    def schema(name: str) -> dict[str, Any] | None:
        form = forms.get(name)
        return form_schema(form.defn) if form is not None and isinstance(form.defn, FormDef) else None

    props: dict[str, Any] = {}
    if (input_schema := schema(defn.input_form)) is not None:
        props["input"] = input_schema
    for step in defn.steps:
        if step.output_key not in props and (out := schema(step.output_form)) is not None:
            props[step.output_key] = out
    by_key = {s.key: s for s in defn.steps}
    writer = {s.output_key: s.key for s in defn.steps}
    sites: list[tuple[str, TemplateSite]] = []
    for i, step in enumerate(defn.steps):
        texts: list[tuple[tuple[Any, ...], str]] = [(("steps", i, "prompt"), step.prompt)] \
            if isinstance(step.prompt, str) else []
        texts += [(("steps", i, "mapping", key), expr) for key, expr in (step.mapping or {}).items() if isinstance(expr, str)]
        # a parent naming no step is reported already: no claim about what comes before then
        before = _ancestor_outputs(step, by_key) or {"input", *writer}
        for path, text in texts:
            if not is_template(text):
                continue
            problem = syntax_error(text)
            if problem is not None:
                yield located(unit, "template-syntax", path, f"template does not parse: {problem[0]}", line=problem[1],
                              hint="templates are Jinja2: `{{ field }}` inserts a value; quote a YAML value that starts with `{{`")
                continue
            sites.append((step.key, (path, text, frozenset())))
            yield from _step_reads(unit, path, text, step.key, before, writer, props)
    yield from nested_findings(unit, {"properties": props}, sites)


def _ancestor_outputs(step: Any, by_key: dict[str, Any]) -> set[str] | None:
    """``input`` and the output keys of the steps a step comes after (its parent chain); None
    when the chain names a step that does not exist."""
    out, seen, parent = {"input"}, set(), step.parent
    while parent is not None and parent not in seen:
        if parent not in by_key:
            return None
        seen.add(parent)
        out.add(by_key[parent].output_key)
        parent = by_key[parent].parent
    return out


def _step_reads(unit, path: tuple, text: str, step_key: str, before: set[str], writer: dict[str, str],
                props: dict[str, Any]) -> Iterator[Finding]:
    info = analyse(text)
    for name in sorted(info.reads):
        if name in before:
            continue
        line = name_line(text, name)
        if name in writer:
            yield located(unit, "maybe-unset", path, f"`{name}` is written by step `{writer[name]}`, which does not "
                          f"come before step `{step_key}`", line=line,
                          hint=f"make step `{writer[name]}` an ancestor of `{step_key}` (its `parent`, or its parent's)")
        else:
            yield located(unit, "unknown-field", path, f"`{name}` is neither the template's `input` nor a step's "
                          "output_key", line=line, hint=choices_hint(name, sorted(before), what="readable here"))
    for access in sorted(info.paths):
        if access[0] not in before:
            continue
        node: Any = props.get(access[0])
        for depth, segment in enumerate(access[1:], start=1):
            fields = node.get("properties") if isinstance(node, dict) else None
            if not isinstance(fields, dict) or node.get("additionalProperties") is not False:
                break  # a list of entries (indexed), or an open object: no claim
            if segment not in fields:
                dotted = ".".join(access[:depth + 1])
                yield located(unit, "unknown-field", path, f"`{dotted}`: `{'.'.join(access[:depth])}` has no field "
                              f"`{segment}`", line=name_line(text, dotted) if dotted in text else name_line(text, access[0]),
                              hint=choices_hint(segment, sorted(fields), what="its fields"))
                break
            node = fields[segment]


def _parent_cycles(defn: TemplateDef, keys: dict[str, int]) -> Iterator[Finding]:
    """Each step has at most one parent, so a cycle is found by following parents."""
    parent = {s.key: s.parent for s in defn.steps if s.parent in keys}
    reported: set[str] = set()
    for start in parent:
        trail: list[str] = []
        node: str | None = start
        while node is not None and node not in trail and node not in reported:
            trail.append(node)
            node = parent.get(node)
        if node is not None and node in trail:
            cycle = trail[trail.index(node):]
            reported.update(cycle)
            first = min(cycle, key=lambda k: keys[k])  # report at the earliest step of the cycle
            shown = " → ".join([*cycle[cycle.index(first):], *cycle[:cycle.index(first)], first])
            yield Finding("cycle", ("steps", keys[first], "parent"), f"step parents form a cycle: {shown}",
                          hint="a step's parent must come from earlier in the chain; remove one of these `parent` links")
        reported.update(trail)


# --------------------------------------------------------------------------------------------
# workflow


def _optional_members(unit, defn: WorkflowDef, ws) -> Iterator[Finding]:
    """``${meta.kind}`` in a step's params, where ``kind`` is an optional property of the input
    ``meta``: a valid input can omit it, and the render fails (``maybe-unset``, as in processes).
    The same for a member a step's output cannot hold (:func:`_shapes_by_step`): one its
    built-in's whole result does not declare, or one its ``projection`` does not ``$include``."""
    # only inputs: a literal var's value is known (its members are `_literal_member`'s business)
    schema = {"properties": {k: v for k, v in workflow_inputs(defn).items() if k not in defn.vars}}
    sites: list[tuple[str, TemplateSite]] = []
    for i, step in enumerate(defn.steps):
        verbatim = verbatim_params(step)
        for key, value in step.params.items():
            if key not in verbatim and isinstance(value, str) and has_refs(value):
                sites.append((f"step {i}", (("steps", i, "params", key), to_jinja(value), frozenset())))
    yield from nested_findings(unit, schema, sites)
    shapes = _shapes_by_step(defn, ws)
    for _, (path, text, _scope) in sites:  # a member the input's (or output's) object schema does not declare
        step = defn.steps[int(path[1])]
        fetched = {"fetched": _fetched_schema(step.fetch)} if step.fetch else {}
        held = {"properties": {**shapes[int(path[1])], **schema["properties"], **fetched}}
        info = analyse(text)
        said: set[str] = set()  # `x[0]` and `x[0].y` fail at the same read: one finding
        for access in sorted(info.paths | info.indexed, key=shown_path):
            found = member_problem(access, held)
            if found:  # a member of a value that has none (a string, a number…)
                yield located(unit, "wrong-type", path, found[0], line=name_line(text, str(access[0])), hint=found[1])
                continue
            node: Any = held
            for depth, segment in enumerate(access):
                absent = _may_be_absent(node, access, depth) if depth else None
                if absent:  # null, or a list too short: the render fails for such a value
                    if absent[0] not in said:
                        said.add(absent[0])
                        yield located(unit, "maybe-unset", path, absent[0], line=name_line(text, str(access[0])), hint=absent[1])
                    break
                if isinstance(segment, int):  # an item of a list: its declared `items`, if any
                    node = node.get("items") if isinstance(node, dict) else None
                    continue
                props = node.get("properties") if isinstance(node, dict) else None
                if not isinstance(props, dict) or not props:
                    break
                if segment not in props:
                    if depth:  # a top-level name is the references' business
                        parent = shown_path(access[:depth])
                        yield located(unit, "maybe-unset", path,
                                      f"`{shown_path(access[:depth + 1])}` may be unset here: `{parent}` declares no property "
                                      f"`{segment}`, so a valid `{parent}` need not have it",
                                      line=name_line(text, str(access[0])),
                                      hint=f"declare `{segment}` (required) in `{parent}`'s schema, or read a declared property")
                    break
                node = props[segment]


def _may_be_absent(node: Any, access: tuple[str | int, ...], depth: int) -> tuple[str, str] | None:
    """``(message, hint)`` when reading ``access[depth]`` of the value at ``access[:depth]``
    (declared by ``node``) fails for some valid value: the value may be null, or the read is an
    index a list holding fewer items has not (its ``minItems`` does not promise it)."""
    kinds = _kinds(node)
    if not kinds:
        return None
    parent, read = shown_path(access[:depth]), shown_path(access[:depth + 1])
    if "null" in kinds and kinds & {"object", "array"}:
        return (f"`{read}` may be unset here: `{parent}` may be null", f"guard the read (`{{% if {parent} %}}`), "
                f"or make `{parent}` never null")
    segment = access[depth]
    if isinstance(segment, int) and kinds == {"array"}:
        needed = segment + 1 if segment >= 0 else -segment
        promised = node.get("minItems") if isinstance(node.get("minItems"), int) else 0
        if promised < needed:
            hint = ("without `on_not_found: ignore` a fetch that finds nothing fails the step instead" if parent == "fetched"
                    else f"declare `minItems: {needed}` on `{parent}`, or read it whole (`| first` fails too on an empty list)")
            return (f"`{read}` may be unset here: `{parent}` may hold fewer than {needed} item(s)"
                    + (f" (its schema promises {promised})" if promised else ""), hint)
    return None


def _fetched_schema(spec: Any) -> dict[str, Any]:
    """What ``${fetched}`` holds in the params of a step with ``fetch`` (:func:`flows.runtime.dsl.fetch`):
    one document for a query by ``id``, else a list of them — at least one, unless
    ``on_not_found: ignore``, where the list may be empty and the one document null."""
    query = spec.get("query") if isinstance(spec, dict) else None
    if not isinstance(query, dict):
        return {"type": ["object", "array", "null"]}
    ignore = spec.get("on_not_found") == "ignore"
    if "id" in query:
        return {"type": ["object", "null"] if ignore else "object"}
    return {"type": "array", "items": {"type": "object"}, **({} if ignore else {"minItems": 1})}


def _shapes_by_step(defn: WorkflowDef, ws) -> list[dict[str, dict[str, Any]]]:
    """For each step, the shape of each step output it can read, where known: the value the last
    step writing that name left there, when that step ran unconditionally and was waited for
    (a skipped or unawaited step leaves the earlier value, or none: unknown)."""
    current: dict[str, dict[str, Any]] = {}
    by_step: list[dict[str, dict[str, Any]]] = []
    for step in defn.steps:
        by_step.append(dict(current))
        if step.output:
            shape = _step_shape(step, ws) if step.condition is None and not step.async_ else None
            if shape is None:
                current.pop(step.output, None)
            else:
                current[step.output] = shape
    return by_step


def _step_shape(step: WorkflowStep, ws) -> dict[str, Any] | None:
    """The shape of an activity step's output, where it is known: the built-in's whole result, or
    the object a ``$include`` projection keeps (its top-level names; a name the result lacks is
    absent), or what an ``$exclude`` projection leaves of a known result."""
    if step.type != "activity":
        return None
    signature = ws.tools.signature(step.name)
    shape = signature.result_schema if signature is not None else None
    projection = step.projection or {}
    if "$include" in projection and (shape is not None or (signature is not None and signature.result == {"object"})):
        kept = {path.split(".")[0] for path in projection["$include"]}
        members = (shape or {}).get("properties") or {}
        shape = {"type": "object", "properties": {k: members.get(k, {}) for k in sorted(kept)}}
    elif "$exclude" in projection and shape is not None:  # the result's members but the excluded
        dropped = {path for path in projection["$exclude"] if "." not in path}
        reshaped = {path.split(".")[0] for path in projection["$exclude"] if "." in path}  # their members vary
        members = shape.get("properties") or {}
        shape = {"type": "object", "properties": {k: {} if k in reshaped else v for k, v in members.items()
                                                  if k not in dropped}}
    elif projection:
        shape = None
    return shape if shape is not None and shape.get("properties") else None


def _workflow(defn: WorkflowDef, ws) -> Iterator[Finding]:
    inputs = set(workflow_inputs(defn))
    literal_vars = {k for k, v in defn.vars.items() if not has_refs(v)}
    known = inputs | set(defn.vars)

    # vars: computed vars are rendered against the inputs and literal vars (compiler.lower)
    written = {step.output for step in defn.steps if step.output}
    # literal vars nothing replaces (no input of that name, no step output): their value is known
    fixed = {k: v for k, v in defn.vars.items() if k in literal_vars and k not in inputs and k not in written}
    for name, value in defn.vars.items():
        for where, expr in iter_refs(value):
            root = ref_root(expr)
            if root not in inputs | literal_vars:
                why = "another computed var" if root in defn.vars else "no var or input"
                yield Finding("maybe-unset", ("vars", name, *where), f"`${{{expr}}}` refers to {why} (`{root}`)",
                              hint="vars may refer to input_schema properties and to vars with literal values")
            else:
                yield from _literal_member(expr, ("vars", name, *where), fixed)

    try:  # the types the run's context declares: what `${name}` passes to an activity
        context_schema: dict[str, Any] = lower_workflow(defn).pipeline.context.schema_
    except Exception:  # noqa: BLE001 - a workflow that does not lower: the findings below say why
        context_schema = {}
    yield from _typed_names(defn, ws, context_schema)
    context_schema = _read_schema(defn, ws, context_schema)
    outputs: dict[str, dict | None] = {}  # output → condition of the step that sets it
    async_outputs: set[str] = set()
    explicit_ids: dict[str, int] = {}
    child_workflows = ws.named("workflow", "process", "pipeline")
    for i, step in enumerate(defn.steps):
        base = ("steps", i)
        if step.id is not None:
            if step.id in explicit_ids or step.id == VARS_NODE:
                yield Finding("bad-value", (*base, "id"), f"step id `{step.id}` is already used",
                              hint="step ids are unique within a workflow")
            explicit_ids.setdefault(step.id, i)
        visible = known | set(outputs)
        verbatim = verbatim_params(step)  # `${…}` there is not a workflow reference (compiler.tools.VERBATIM_PARAMS)
        params = {k: v for k, v in step.params.items() if k not in verbatim}
        for section, value in (("params", params), ("fetch", step.fetch or {})):
            seen = visible | {"fetched"} if section == "params" and step.fetch else visible
            for where, expr in iter_refs(value):
                yield from _ref(expr, (*base, section, *where), seen, outputs, async_outputs, step.condition)
                if not (step.fetch and ref_root(expr) == "fetched"):
                    yield from _literal_member(expr, (*base, section, *where), fixed)
                if section == "params" and (problem := filter_problem(expr, _with_fetched(step, context_schema))):
                    yield Finding("wrong-type", (*base, section, *where), f"`${{{expr}}}` would fail: {problem}",
                                  hint="apply the filter to a value of the type it takes")
            yield from _jinja_reads(value, (*base, section), seen)
        if step.type == "activity" and step.name == "generateText" and "prompt" in verbatim_params(step):
            yield from _prompt_reads(step.params, (*base, "params"))
        if step.fetch is not None:
            yield from _fetch(step.fetch, (*base, "fetch"), step.type)
        if step.projection is not None:
            yield from _projection(step.projection, (*base, "projection"), step.type)
        for j, name in enumerate(step.import_):
            if name not in defn.vars:
                yield Finding("maybe-unset", (*base, "import", j), f"`{name}` is not a workflow var",
                              hint=choices_hint(name, defn.vars, what="vars"))
        if step.condition:
            yield from _condition(step.condition, (*base, "condition"), visible, outputs, async_outputs)
        if step.type == "activity" and step.name == "set_context" and ws.tools.tools.get(step.name) == "builtin":
            yield Finding("dsl-unsupported", (*base, "name"), "`set_context` is not a workflow activity: its updates "
                          "would be writes the step does not declare",
                          hint="set a value with `vars` (a literal, or `${…}` of the inputs), or give a step `output: name`")
        elif step.type == "activity" and step.name in UNAVAILABLE_ACTIVITIES and step.name not in ws.tools:
            yield Finding("dsl-unsupported", (*base, "name"), f"activity `{step.name}` is not available yet",
                          hint=UNAVAILABLE_ACTIVITIES[step.name])
        elif step.type == "activity" and (known_params := ws.tools.builtin_params(step.name)) is not None:
            yield from _tool_params(step.name, step.params, known_params, base)
            yield from _param_types(step, ws.tools.signature(step.name), _with_fetched(step, context_schema), base)
            yield from activity_values.check_values(step.name, step.params, base)
            named = step.params.get("interaction") if step.name == "executeInteraction" else None
            interactions = ws.named("interaction")
            if isinstance(named, str) and not has_refs(named) and named not in interactions:
                yield Finding("unknown-interaction", (*base, "params", "interaction"), f"no interaction named `{named}`",
                              hint=choices_hint(named, interactions, what="defined interactions"))
        elif step.type == "activity" and ws.tools.agent_only(step.name):
            yield Finding("agent-only-tool", (*base, "name"),
                          f"`{step.name}` works only inside an agent's tool loop; a workflow activity cannot call it",
                          hint="delegate from an agent node (a process or pipeline) whose `tools:` list it")
        elif step.type == "activity" and step.name not in ws.tools and (
                refused := unavailable_tool(step.name, (*base, "name"))) is not None:
            yield refused
        elif step.type == "activity" and step.name not in ws.tools:
            yield Finding("unknown-tool", (*base, "name"), f"no tool is named `{step.name}` (activities are registered tools)",
                          hint=choices_hint(step.name, ws.tools.names(), what="registered tools")
                          + ws.tools.unknown_hint(step.name))
        elif step.type == "activity" and (signature := ws.tools.signature(step.name)) is not None:
            params = signature.parameters.values()
            if not signature.any_keyword:  # a Python tool taking **kwargs takes any other name
                known_params = (tuple(p.name for p in params if p.required), tuple(p.name for p in params if not p.required))
                yield from _tool_params(step.name, step.params, known_params, base)
            else:
                # other names pass; the required ones must still be among the params given
                required = tuple(p.name for p in params if p.required)
                yield from _tool_params(step.name, {k: v for k, v in step.params.items() if k in required}, (required, ()), base)
            yield from _param_types(step, signature, _with_fetched(step, context_schema), base)
        if step.type == "workflow" and step.name in UNAVAILABLE_WORKFLOWS and step.name not in child_workflows:
            yield Finding("dsl-unsupported", (*base, "name"), f"child workflow `{step.name}` is not available yet",
                          hint=UNAVAILABLE_WORKFLOWS[step.name])
        elif step.type == "workflow" and step.name not in child_workflows:
            yield Finding("unknown-process", (*base, "name"), f"no workflow, process or pipeline named `{step.name}`",
                          hint=choices_hint(step.name, [n for n in child_workflows if n != defn.name], what="defined workflows and processes"))
        elif step.type == "workflow":
            yield from _child_params(step, ws, context_schema, base)
        if step.output:
            # a condition reading what this step writes is no longer the one its setter ran under
            for name, cond in outputs.items():
                if cond and step.output in _condition_reads(cond):
                    outputs[name] = {"$changed": step.output, **cond}
            if step.type == "workflow" and step.async_:
                async_outputs.add(step.output)
            else:
                outputs[step.output] = step.condition
                async_outputs.discard(step.output)


#: Activities of the DSL page that Ergon does not run yet, with what to use instead.
UNAVAILABLE_ACTIVITIES: dict[str, str] = {
    # activities of the Vertesia platform's intake workflow (not on the DSL page's list)
    "setDocumentStatus": "Ergon has no current-document status; use `updateDocument` with `properties: {status: ...}`",
    "generateOrAssignContentType": "use `classifyText` with your types as `categories`, or `executeInteraction`",
    "generateDocumentProperties": "use `executeInteraction` with an interaction whose result schema holds the properties",
    "chunkDocument": "Ergon does not split documents into parts; write a Python `@tool` function for it",
}

#: Child workflows of the Vertesia platform that Ergon does not ship, with what to use instead.
UNAVAILABLE_WORKFLOWS: dict[str, str] = {
    "generateObjectText": "use the `extractText` activity (documents in Ergon's store are text)",
}

def _tool_params(name: str, params: dict[str, Any], known: tuple[tuple[str, ...], tuple[str, ...]],
                 base: tuple) -> Iterator[Finding]:
    required, optional = known
    for key in params:
        if key not in required and key not in optional:
            yield Finding("tool-params", (*base, "params", key), f"activity `{name}` has no parameter `{key}`",
                          hint=choices_hint(key, [*required, *optional], what=f"parameters of `{name}`"), at_key=True)
    for key in required:
        if key not in params:
            yield Finding("tool-params", (*base, "params") if params else (*base, "name"),
                          f"activity `{name}` needs the parameter `{key}`", hint=f"add `params: {{{key}: ...}}`")


def _param_types(step: Any, signature: Signature | None, schema: dict[str, Any], base: tuple) -> Iterator[Finding]:
    """Each param's value against the JSON types the tool's parameter takes: a literal, exactly one
    ``${name}`` of a declared type (passed whole, native type and all), or text around references
    (a string). A param the tool does not have is ``_tool_params``' finding."""
    if signature is None:
        return
    verbatim = verbatim_params(step)
    for key, value in step.params.items():
        param = signature.parameters.get(key)
        if param is None or (step.name, key) == ("runJavascriptCode", "code"):  # the javascript_steps pass's
            continue
        finer = activity_values.PARAM_SCHEMAS.get(step.name, {}).get(key)
        if finer is not None and not has_refs(value):
            continue  # a literal held to its finer schema by activity_values
        problem = _argument_problem(schema, param, value if key in verbatim else to_jinja(value))
        if not problem and finer is not None and key not in verbatim:
            problem = _finer_problem(schema, finer, to_jinja(value))
        if problem:
            yield Finding("tool-params", (*base, "params", key), f"`{key}` of activity `{step.name}`: {problem}",
                          hint=f"give `{key}` a value of the type `{step.name}` takes")


def _finer_problem(schema: dict[str, Any], finer: tuple[dict[str, Any], str], value: Any) -> str | None:
    """Why exactly one ``${name}`` passed whole can be refused by a parameter's finer schema
    (:data:`compiler.activity_values.PARAM_SCHEMAS`, a branch of its ``anyOf`` each): a JSON type
    of the name's declared schema that no branch may take (a list of numbers for a list of texts)."""
    reference = _REFERENCE.match(value.strip()) if isinstance(value, str) else None
    source = _path_schema(schema, reference.group(1)) if reference is not None else None
    kinds = _kinds(source)
    if source is None or kinds is None:
        return None
    target, described = finer
    branches = target.get("anyOf") or [target]
    for kind in sorted(kinds):
        part = {**source, "type": kind}
        if kind in ("array", "object") and not isinstance(source.get("items" if kind == "array" else "properties"), dict):
            continue  # what it holds is not declared: no claim
        if all(_may_not_fit(part, branch) for branch in branches):
            return (f"`{reference.group(1) if reference else value}` can be {_shown(_strip(part))}, which the parameter "
                    f"({described}) refuses")
    return None


_MEMBER = re.compile(r"\.([A-Za-z_$][\w$-]*)|\[\s*(-?\d+)\s*\]|\[\s*['\"]([^'\"]*)['\"]\s*\]")


def _literal_member(expr: str, path: tuple, fixed: dict[str, Any]) -> Iterator[Finding]:
    """``${a.b[0]}`` of a var whose literal value is known (``fixed``): each field must be one its
    object has, each index one its list has (``unknown-field``); rendering a missing one fails.
    An expression that is not a plain path (filters, operators) is not followed."""
    root = ref_root(expr)
    if root is None or root not in fixed:
        return
    rest, value, walked = expr[len(root):].strip(), fixed[root], root
    while rest:
        m = _MEMBER.match(rest)
        if m is None:
            return  # not a plain path
        rest = rest[m.end():].lstrip()
        key: str | int = int(m.group(2)) if m.group(2) is not None else m.group(1) or m.group(3) or ""
        if isinstance(key, int) and isinstance(value, list):
            if not -len(value) <= key < len(value):
                yield Finding("unknown-field", path, f"`${{{expr}}}`: `{walked}` has {len(value)} item(s), so no item [{key}]",
                              hint=f"`{walked}` is the literal var's list; index it within its length")
                return
            value, walked = value[key], f"{walked}[{key}]"
        elif isinstance(key, str) and isinstance(value, dict):
            if key not in value and not (m.group(1) and hasattr(value, key)):  # `.items` is the mapping's method
                yield Finding("unknown-field", path, f"`${{{expr}}}`: `{walked}` has no field `{key}`",
                              hint=choices_hint(key, [str(k) for k in value], what="its fields") if value else
                              f"`{walked}` is an empty mapping")
                return
            if key not in value:
                return
            value, walked = value[key], f"{walked}.{key}"
        elif isinstance(key, int) and isinstance(value, str):  # a character of the text
            if not -len(value) <= key < len(value):
                yield Finding("unknown-field", path, f"`${{{expr}}}`: `{walked}` is text of {len(value)} character(s), "
                              f"so no item [{key}]", hint=f"`{walked}` is the literal var's text; index it within its length")
                return
            value, walked = value[key], f"{walked}[{key}]"
        else:  # a member of a value that has none: the render fails, as Jinja finds no such attribute
            if isinstance(key, str) and value is not None and not key.startswith("_") and hasattr(value, key):
                return  # a method of the value (`.upper` of a string): Jinja renders it, not followed
            shown = f"field `{key}`" if isinstance(key, str) else f"item [{key}]"
            kind = "null" if value is None else _named_kinds({json_type(value)})
            text = json.dumps(value)
            yield Finding("unknown-field", path, f"`${{{expr}}}`: `{walked}` is {kind} ({text if len(text) <= 40 else text[:39] + '…'}), "
                          f"which has no {shown}", hint=f"read `{walked}` itself, or make the var an object with `{key}`"
                          if isinstance(key, str) else f"read `{walked}` itself, or make the var a list")
            return


def _jinja_reads(value: Any, path: tuple, visible: set[str]) -> Iterator[Finding]:
    """``{{ }}`` written in a param is Jinja rendered over the run's context, as ``${}`` is: it
    parses (``template-syntax``) and reads only names the step can see (``maybe-unset``)."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _jinja_reads(v, (*path, k), visible)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _jinja_reads(v, (*path, i), visible)
    elif is_template(value):
        info = analyse(value)
        if info.error is not None:
            yield Finding("template-syntax", path, f"template does not parse: {info.error[0]}",
                          hint="`{{ }}` in a workflow param is Jinja; write `${name}` to insert a value")
            return
        for name in sorted(info.reads - visible):
            yield Finding("maybe-unset", path, f"`{{{{ {name} }}}}` reads `{name}`, which is neither a var, an input nor "
                          "the output of an earlier step", hint=choices_hint(name, visible, what="visible names"))


def _prompt_reads(params: dict[str, Any], path: tuple) -> Iterator[Finding]:
    """A ``generateText`` prompt is rendered over ``data`` alone: it reads only ``data``'s keys
    (``unknown-field``, when ``data`` is a mapping written out), and a ``${}`` in it would reach the
    model as text (``bad-value``)."""
    prompt, data = params.get("prompt"), params.get("data")
    if not isinstance(prompt, str):
        return
    for _, expr in iter_refs(prompt):
        yield Finding("bad-value", (*path, "prompt"), f"`${{{expr}}}` in a `generateText` prompt is not a workflow "
                      "reference: the prompt is a template rendered over `data`",
                      hint=f"pass the value in `data` and write `{{{{ {ref_root(expr) or 'name'} }}}}`: "
                           f"`data: {{{ref_root(expr) or 'name'}: \"${{{expr}}}\"}}`")
    if data is not None and not isinstance(data, dict):
        return
    info = analyse(prompt)
    if info.error is not None:
        yield Finding("template-syntax", (*path, "prompt"), f"template does not parse: {info.error[0]}",
                      hint="the prompt is Jinja rendered over `data`: `{{ key }}` inserts a value of `data`")
        return
    keys = set(data or {})
    for name in sorted(info.reads - keys):
        yield Finding("unknown-field", (*path, "prompt"), f"the prompt reads `{name}`, which `data` does not give",
                      hint=choices_hint(name, keys, what="keys of `data`") if keys else f"add `data: {{{name}: ...}}`")


def _with_fetched(step: Any, schema: dict[str, Any]) -> dict[str, Any]:
    """A step with ``fetch`` reads ``${fetched}``: a document (an object), a list of them, or
    nothing when ``on_not_found: ignore`` (:func:`flows.runtime.dsl.fetch`)."""
    if not step.fetch:
        return schema
    return {**schema, "properties": {**(schema.get("properties") or {}), "fetched": _fetched_schema(step.fetch)}}


def _read_schema(defn: WorkflowDef, ws, schema: dict[str, Any]) -> dict[str, Any]:
    """The context schema a step's ``${name}`` is read against: a name some step's ``output``
    writes (declared `{}`, any value, so that the write is never refused) typed by what can be in
    it — its literal var's value, and each writing step's result (an activity's, as its tool
    returns it; a child workflow's context, an object); unknown as soon as one of them is. A
    computed var no step writes is typed by what it renders: the value of its one ``${name}``,
    else text."""
    props = dict(schema.get("properties") or {})
    inputs = workflow_inputs(defn)
    for name in {step.output for step in defn.steps if step.output} - set(inputs):
        kinds: set[str] = set()
        shapes: list[dict[str, Any] | None] = []
        if name in defn.vars:
            if has_refs(defn.vars[name]):
                continue
            kinds.add(json_type(defn.vars[name]))
            shapes.append(None)
        for step in defn.steps:
            if step.output != name:
                continue
            signature = ws.tools.signature(step.name) if step.type == "activity" else None
            result = frozenset({"object"}) if step.type == "workflow" else signature.result if signature else None
            if result is None or step.projection:  # a projection reshapes the result
                break
            kinds |= result
            shapes.append(signature.result_schema if signature else None)
        else:
            if len(shapes) == 1 and shapes[0] is not None:  # one built-in writes it: its whole result
                props[name] = shapes[0]
            elif kinds:  # the types only: the members of a value are not held against a target
                props[name] = {"type": sorted(kinds), "$comment": UNKNOWN_MEMBERS}
    written = {step.output for step in defn.steps if step.output}
    for name, value in defn.vars.items():  # a computed var nothing else writes: what it renders to
        rendered = to_jinja(value) if has_refs(value) and name not in inputs and name not in written else None
        if not isinstance(rendered, str):
            continue
        reference = _REFERENCE.match(rendered.strip())
        if reference is not None:  # one `${name}`: that value, type and all
            source = _path_schema(schema, reference.group(1))
            if source is not None:
                props[name] = source
        elif not _one_expression(rendered):  # text around references: a string
            props[name] = _TEXT
    return {**schema, "properties": props}


def _typed_names(defn: WorkflowDef, ws, schema: dict[str, Any]) -> Iterator[Finding]:
    """A var or a step output named like an ``input_schema`` property is that context field, typed
    by the input's schema: a literal var it refuses refuses every start (``bad-value``); a computed
    var (exactly one ``${name}`` passes that field's value, type and all; text is a string) and a
    step's result (an activity's, as its tool returns it; a child workflow's context, an object)
    of a type it may refuse are refused when written (``write-type``)."""
    inputs = workflow_inputs(defn)
    for name, value in defn.vars.items():
        target = _field_schema(schema, name) if name in inputs else None
        if target is None:
            continue
        if not has_refs(value):
            if not _fits(target, value):
                yield Finding("bad-value", ("vars", name), f"the default {_shown(value)} of `{name}` does not fit its "
                              f"input_schema property ({_shown(_strip(target))}): every start would be refused",
                              hint=f"give `{name}` a value of the type input_schema declares, or rename the var")
            continue
        rendered = to_jinja(value)
        reference = _REFERENCE.match(rendered.strip()) if isinstance(rendered, str) else None
        if reference is not None:
            source = _path_schema(schema, reference.group(1))
            problem = _may_not_fit(source, target)
            given = f"`${{{reference.group(1)}}}` ({_shown(_strip(source or {}))})"
        else:
            problem = isinstance(rendered, str) and _may_not_fit(_TEXT, target)
            given = "its text (a string)"
        if problem:
            yield Finding("write-type", ("vars", name), f"computed var `{name}` is {given}, which its input_schema "
                          f"property ({_shown(_strip(target))}) cannot always take", hint=f"compute `{name}` as a value of "
                          "the type input_schema declares, or give the var another name")
    for i, step in enumerate(defn.steps):
        target = _field_schema(schema, step.output) if step.output in inputs else None
        if target is None or step.output is None:
            continue
        signature = ws.tools.signature(step.name) if step.type == "activity" else None
        shape = {"type": "object", "$comment": UNKNOWN_MEMBERS} if step.type == "workflow" \
            else signature.result_shape() if signature else None
        if shape is not None and not step.projection and _may_not_fit(shape, target):
            yield Finding("write-type", ("steps", i, "output"), f"the step's result ({_shown(_strip(shape))}) is "
                          f"written into `{step.output}`, whose input_schema property ({_shown(_strip(target))}) cannot "
                          "always take it", hint="write the result into a name of its own")


def _child_params(step: Any, ws, schema: dict[str, Any], base: tuple) -> Iterator[Finding]:
    """A child workflow step's ``params`` are the child run's inputs: each must be of a type the
    child's field can take (``write-type``, as a process node's ``input``:
    :mod:`compiler.passes.write_types`), and every required input the child has no initial value
    for must be given (``missing-field``); the run would refuse the child's start."""
    child = ws.get(step.name, "workflow", "process", "pipeline")
    if isinstance(child, WorkflowDef):
        try:
            lowered = lower_workflow(child).pipeline
        except Exception:  # noqa: BLE001 - a child that does not lower is reported on its own file
            return
        child_schema, initial = lowered.context.schema_, lowered.context.initial
    elif isinstance(child, (ProcessDef, PipelineDef)):
        child_schema, initial = child.context.schema_, child.context.initial
    else:
        return
    node = step_node(step, [])
    for finding in _sub_process(schema, child_schema, node, base):  # type: ignore[arg-type]
        at = finding.path
        if at[len(base):len(base) + 1] == ("input",):  # a node's `input` is the step's `params`
            at = (*base, "params", *at[len(base) + 1:])
        yield Finding(finding.code, at, finding.message.replace("the input", "the param"), hint=finding.hint)
    props = child_schema.get("properties") if isinstance(child_schema, dict) else None
    required = child_schema.get("required") if isinstance(child_schema, dict) else None
    if not isinstance(props, dict) or not isinstance(required, list):
        return
    missing = [r for r in required if r in props and r not in initial and r not in step.params]
    if missing:
        yield Finding("missing-field", (*base, "params") if step.params else (*base, "name"),
                      f"child workflow `{step.name}` needs the input(s) {', '.join(f'`{m}`' for m in missing)}, "
                      "which `params` does not give", hint=f"add `params: {{{missing[0]}: ...}}`")


FETCH_KEYS = ("type", "source", "query", "select", "limit", "on_not_found")


def _fetch(spec: dict[str, Any], path: tuple, step_type: str) -> Iterator[Finding]:
    """The shape :func:`flows.runtime.dsl.fetch` runs."""
    if step_type == "workflow":
        yield Finding("dsl-unsupported", path, "`fetch` on a child workflow step is not supported",
                      hint="fetch in an activity step before it and pass the result in `params`")
        return
    for key in spec:
        if key not in FETCH_KEYS:
            yield Finding("bad-value", (*path, key), f"`{key}` is not a fetch property", hint=choices_hint(key, FETCH_KEYS, what="fetch properties"), at_key=True)
    kind = spec.get("type", "document")
    if kind != "document":
        yield Finding("dsl-unsupported", (*path, "type"), f"fetch type `{kind}` is not supported",
                      hint="only `type: document` (the local document store) is supported; call a tool for other data")
    if "source" in spec:
        yield Finding("dsl-unsupported", (*path, "source"), "fetch `source` is not supported",
                      hint="remove it: documents are fetched from the local document store")
    query = spec.get("query")
    if not isinstance(query, dict) or not query:
        yield Finding("bad-value", (*path, "query") if "query" in spec else path, "fetch needs a `query` mapping",
                      hint="e.g. `query: {id: \"${documentId}\"}` or `{name: ...}` or `{text: words to search}`")
    select = spec.get("select")
    if select is not None and (not isinstance(select, list) or not all(isinstance(s, str) and s for s in select)):
        yield Finding("bad-value", (*path, "select"), "fetch `select` is a list of field names", hint="e.g. `select: [id, name, content]`")
    limit = spec.get("limit")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        yield Finding("bad-value", (*path, "limit"), "fetch `limit` is a whole number of at least 1")
    on_nf = spec.get("on_not_found")
    if on_nf is not None and on_nf not in ("throw", "ignore"):
        yield Finding("bad-value", (*path, "on_not_found"), f"`on_not_found` is `throw` or `ignore`, not `{on_nf}`")


def _projection(proj: dict[str, list[str]], path: tuple, step_type: str) -> Iterator[Finding]:
    if step_type == "workflow":
        yield Finding("dsl-unsupported", path, "`projection` on a child workflow step is not supported",
                      hint="project in the child workflow's last step, or in an activity step after it")
        return
    if not proj:
        yield Finding("bad-value", path, "a projection needs `$include` or `$exclude`")
    for op, fields in proj.items():
        if op not in ("$include", "$exclude"):
            yield Finding("bad-value", (*path, op), f"`{op}` is not a projection operator",
                          hint="use `$include: [fields]` or `$exclude: [fields]`", at_key=True)
            continue
        for j, field in enumerate(fields):
            if not field or any(not part for part in field.split(".")):
                yield Finding("bad-value", (*path, op, j), f"`{field}` is not a field path", hint="write `name` or `owner.email`")


def _ref(expr: str, path: tuple, visible: set[str], outputs: dict[str, dict | None], async_outputs: set[str],
         condition: dict | None, *, in_condition: bool = False) -> Iterator[Finding]:
    """Check one reference; ``condition`` is the reading step's own condition."""
    root = ref_root(expr)
    if root is None:
        yield Finding("bad-value", path, f"`${{{expr}}}` is not a variable reference", hint="write `${name}` or `${name.field}`")
        return
    if root in async_outputs and root not in visible:
        yield Finding("maybe-unset", path, f"`{root}` is the output of an `async` child workflow, which may still be running",
                      hint="remove `async: true` from that step, or read its output after the workflow ends")
        return
    if root not in visible:
        yield Finding("maybe-unset", path, f"`${{{expr}}}` refers to `{root}`, which is neither a var, an input nor the output of an earlier step",
                      hint=choices_hint(root, visible, what="visible names") if visible else
                      f"declare it in `vars` (a value) or under `input_schema.properties` (a run input): `vars: {{{root}: …}}`")
        return
    setter_condition = outputs.get(root)
    # a condition reading an unset value sees null and is simply false, so only params are held
    # to "set on every path"; a step with the same condition as the setter runs only after it,
    # unless a var the condition reads was written in between (the setter's is then marked changed)
    if not in_condition and root in outputs and setter_condition and "$changed" in setter_condition:
        yield Finding("maybe-unset", path, f"`{root}` is set by a step that is skipped when its condition is false, and "
                      f"`{setter_condition['$changed']}`, which that condition reads, has been written since",
                      hint="read it before that write, or read a var with a default value")
    elif not in_condition and root in outputs and setter_condition and setter_condition != condition:
        yield Finding("maybe-unset", path, f"`{root}` is set by a step that is skipped when its condition is false",
                      hint="give this step the same condition, or read a var with a default value")


def _condition_reads(cond: dict[str, Any]) -> set[str]:
    """The vars a condition reads: its clauses' paths and the ``${}`` of their values."""
    clauses, _ = condition_clauses(cond)
    reads = {ref_root(c.var) for c in clauses}
    reads |= {ref_root(expr) for c in clauses for _, expr in iter_refs(c.value)}
    return {r for r in reads if r}


def _condition(cond: dict[str, Any], path: tuple, visible: set[str], outputs, async_outputs) -> Iterator[Finding]:
    clauses, problems = condition_clauses(cond)
    for p in problems:
        # an unknown operator is a key: point at it, not at its operand
        yield Finding(p.code, (*path, *p.where), p.message, hint=p.hint, at_key=p.code == "guard-invalid")
    if not problems:  # what the run evaluates is the lowered rule: the guard engine must take it
        when, _ = lower_condition(cond)
        for _, _, message in jl.check_rule(when) if when is not None else []:
            yield Finding("guard-invalid", path, f"the condition becomes a rule the guard engine refuses: {message}",
                          hint="compare with a string, number, boolean, null or a list of them, not an object")
            break
    for c in clauses:
        where = (*path, *c.where)
        yield from _ref(c.var, where, visible, outputs, async_outputs, None, in_condition=True)
        if c.op == "$regexp":
            if not isinstance(c.value, str):
                yield Finding("bad-value", where, "`$regexp` expects a pattern string")
            else:
                try:
                    re.compile(c.value)
                except re.error as exc:
                    yield Finding("bad-value", where, f"invalid regular expression `{c.value}`: {exc}",
                                  hint="fix the pattern at the position the error gives (Python `re` syntax, searched anywhere in the value; escape a literal `.`, `(`, `[` with `\\`)")
        elif c.op in ("$in", "$nin") and not isinstance(c.value, list) and not (isinstance(c.value, str) and c.value.startswith("${")):
            yield Finding("bad-value", where, f"`{c.op}` expects a list of values", hint=f"write `{c.op}: [a, b]`")
        if isinstance(c.value, str):
            for _, expr in iter_refs(c.value):
                yield from _ref(expr, where, visible, outputs, async_outputs, None, in_condition=True)


# --------------------------------------------------------------------------------------------
# form and interaction


def _form(defn: FormDef) -> Iterator[Finding]:
    groups: set[str] = set()
    for g, group in enumerate(defn.groups):
        if group.name in groups:
            yield Finding("bad-value", ("groups", g, "name"), f"group `{group.name}` is defined twice", hint=f"rename one of the groups (e.g. `{group.name}_2`), or merge their fields into one")
        groups.add(group.name)
        fields: set[str] = set()
        for f, field in enumerate(group.fields):
            if field.name in fields:
                yield Finding("bad-value", ("groups", g, "fields", f, "name"), f"field `{field.name}` is defined twice in group `{group.name}`",
                              hint=f"rename one of the fields (e.g. `{field.name}_2`): field names are unique within a group")
            fields.add(field.name)
            if field.type == "select" and not field.options:
                yield Finding("bad-value", ("groups", g, "fields", f), f"select field `{field.name}` has no options",
                              hint="add `options: [...]` with the allowed values")


def _interaction(defn: InteractionDef) -> Iterator[Finding]:
    if not defn.prompts:
        yield Finding("bad-value", ("prompts",), "an interaction needs at least one prompt segment",
                      hint="add `prompts: [{role: user, template: ...}]`")
    if defn.input_schema and defn.test_data is not None:
        import jsonschema

        samples = defn.test_data if isinstance(defn.test_data, list) else [defn.test_data]
        try:
            jsonschema.Draft202012Validator.check_schema(defn.input_schema)
        except jsonschema.SchemaError:
            return  # an invalid schema is reported where schemas are checked
        validator = jsonschema.Draft202012Validator(defn.input_schema)
        for i, sample in enumerate(samples):
            try:
                errors = sorted(validator.iter_errors(sample), key=lambda e: [str(p) for p in e.path])
            except Exception:  # noqa: BLE001 - e.g. an unresolvable $ref in the user's schema: not ours to report here
                return
            for err in errors[:1]:
                path = ("test_data", i) if isinstance(defn.test_data, list) else ("test_data",)
                yield Finding("bad-value", (*path, *err.path), f"test data does not match input_schema: {err.message}")
