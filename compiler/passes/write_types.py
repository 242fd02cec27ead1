"""The `write_types` pass: what a person may answer, and what a sub-process takes and gives back,
must be able to fit the fields it is written to (code ``write-type``).

The runtime refuses a write that violates ``context.schema``: an answer is refused before it is
accepted (the task stays open, ``flows.humans``), any other write fails the node
(``flows.runtime.context``). Some refusals are certain from the definition alone:

* **a person's answer** — for each field of a ``human_task`` that the node writes (the answer is
  copied into the context field of the same name):

  - a ``select`` option the field's schema refuses: it is offered, and refused when picked;
  - a field type none of whose answers the schema takes — ``boolean`` into a field without
    booleans, ``text``/``string`` into one without strings, ``number``/``integer`` into one
    without numbers: the task can never be answered, and the run waits for ever;

  (an answer the schema takes only sometimes — 2.5 for an ``integer``, free text for an
  ``enum`` — is refused with the reason when given, and the person answers again);
* **a sub-process** — a required input of the child that the node's ``input`` does not give
  (``missing-field``); a field ``returns`` takes that the child may not have set when it
  completes (``maybe-unset``); a ``process`` node's ``input`` is written into the child's context, and
  what ``returns`` picks into the parent's: an input value with no template that the child's
  field refuses, an input that is exactly one ``{{ field }}`` (which passes the field's value
  through, native type and all) whose declared type the child's field cannot take, text around a
  template (a string) for a child field without strings, and a
  returned child field (``returns.from: context.x``, ``returns.context``, ``outcome``) whose type
  the written field cannot take. The child is the inline ``process_definition``, or the process,
  pipeline or workflow of that name (a pinned ``process_version`` is read at run time: skipped).
* **an interaction's input** — what an ``interaction`` or ``agent`` node passes to a named
  interaction, against its ``input_schema``, as for a sub-process's input;
* **a fan-out** — a ``foreach`` over a field whose schema takes no array (``wrong-type``), and a
  ``collect`` into a field that takes no list;
* **a chained start** — an ``on_complete`` trigger's ``map`` renders each value over the context
  of the run that completed, and the result is this definition's input: a value with no template
  that the field refuses, exactly one ``{{ field }}`` of the upstream context whose declared type
  the field cannot take, or text around a template (always a string) for a field without
  strings. The chained run would be refused at every completion, after the upstream run is over.

"Cannot take" means *may refuse* (:func:`_may_not_fit`): a declared type the field does not
allow — a ``number``, which may have a fraction, into an ``integer`` field included — a value
outside the listed values of an ``enum`` field, recursively in the items of arrays and the
properties both objects declare. The runtime refuses any such value, so the run would fail on
the first one that comes.

Fixed ``context_update`` values are the authoring pass's (``bad-value``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from jsonschema import Draft202012Validator

from compiler.errors import DocPath, Finding
from compiler.ir import (
    AgentNode,
    BranchNode,
    ForeachNode,
    HumanTaskNode,
    InteractionDef,
    InteractionNode,
    OnCompleteTrigger,
    PipelineDef,
    ProcessDef,
    ProcessNode,
    TaskField,
    WorkflowDef,
)
from compiler.templates import is_template
from compiler.tool_signatures import UNKNOWN_MEMBERS, json_type
from compiler.walk import iter_definitions, iter_nodes

#: a template that is exactly one reference to a (dotted) field: ``{{ order.total }}``
_REFERENCE = re.compile(r"^\{\{\s*([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)\s*\}\}$")


def check(unit, ws) -> Iterator[Finding]:
    if not isinstance(unit.defn, (ProcessDef, PipelineDef)):
        return
    for graph, base in iter_definitions(unit.defn):
        schema = graph.context.schema_
        for site in iter_nodes(graph, base):
            node = site.node
            schema = scoped_schema(graph.context.schema_, site)
            if isinstance(node, HumanTaskNode):
                for i, f in enumerate(node.task.fields):
                    if f.name in node.writes:
                        yield from _answer(schema, f, (*site.path, "task", "fields", i))
            elif isinstance(node, ProcessNode):
                child = _child_schema(node, ws)
                if child is not None:
                    yield from _sub_process(schema, child, node, site.path)
                    yield from _missing_inputs(node, child, _child_initial(node, ws), site.path)
                    yield from _unset_returns(node, _child_definition(node, ws), site.path)
            if isinstance(node, (ForeachNode, BranchNode)):
                yield from _fan_out(schema, node, site.path, ws)
            if isinstance(node, (InteractionNode, AgentNode)) and node.interaction:
                called = ws.get(node.interaction, "interaction")
                if isinstance(called, InteractionDef) and isinstance(called.input_schema, dict):
                    yield from _inputs(schema, called.input_schema, node.input or {}, (*site.path, "input"),
                                       f"interaction `{node.interaction}`'s")
    for i, trigger in enumerate(unit.defn.triggers):
        if isinstance(trigger, OnCompleteTrigger) and trigger.map:
            upstream = _schema_of(trigger.definition, ws)
            if upstream is not None:
                yield from _chained_map(unit.defn.context.schema_, upstream, trigger, ("triggers", i, "map"))


def scoped_schema(schema: Any, site: Any) -> Any:
    """The schema a node's templates read against: the context's, plus a foreach body's item
    (its ``as`` name) typed by the items of the list it runs over, when that list's schema says."""
    parent = site.parent.node if site.parent is not None else None
    if not isinstance(parent, ForeachNode) or not isinstance(schema, dict) or "." in parent.foreach:
        return schema
    over = _field_schema(schema, parent.foreach)
    items = over.get("items") if isinstance(over, dict) else None
    if not isinstance(items, dict):
        return schema
    return {**schema, "properties": {**(schema.get("properties") or {}), parent.as_: items}}


def _field_schema(schema: Any, name: str) -> dict[str, Any] | None:
    """The schema of top-level field ``name``, with the root's definitions for its `$ref`s."""
    props = schema.get("properties") if isinstance(schema, dict) else None
    prop = props.get(name) if isinstance(props, dict) else None
    if not isinstance(prop, dict):
        return None
    return {**{k: schema[k] for k in ("$defs", "definitions") if k in schema}, **prop}


def _fits(prop: dict[str, Any], value: Any) -> bool:
    try:
        return Draft202012Validator(prop).is_valid(value)
    except Exception:  # noqa: BLE001 - a broken schema (unknown type, bad regex...) is bad-schema's diagnostic
        return True


def _has_template(value: Any) -> bool:
    if isinstance(value, str):
        return is_template(value)
    if isinstance(value, dict):
        return any(_has_template(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_template(v) for v in value)
    return False


def _shown(value: Any) -> str:
    return json.dumps(value, default=str, ensure_ascii=False)


def _strip(prop: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in prop.items() if k not in ("$defs", "definitions", "description", "title")}


def _types(prop: dict[str, Any]) -> set[str] | None:
    """The JSON types the field accepts, when its schema says (None: any)."""
    kind = prop.get("type")
    if isinstance(kind, str):
        return {kind}
    if isinstance(kind, list):
        return {k for k in kind if isinstance(k, str)}
    return None


#: the JSON types a field of each task field type answers with
_ANSWER_KINDS: dict[str, set[str]] = {"text": {"string"}, "string": {"string"}, "boolean": {"boolean"},
                                      "number": {"number", "integer"}, "integer": {"integer"}}


def _answer(schema: Any, f: TaskField, path: DocPath) -> Iterator[Finding]:
    prop = _field_schema(schema, f.name)
    if prop is None:
        return
    shown = _shown(_strip(prop))
    if f.type == "select":
        for j, option in enumerate(f.options or []):
            if not _fits(prop, option):
                yield Finding("write-type", (*path, "options", j),
                              f"option {_shown(option)} of select `{f.name}` does not fit `{f.name}` in context.schema "
                              f"({shown}): picking it would be refused",
                              hint=f"offer only values `{f.name}`'s schema accepts, or add this one to its schema")
        return
    answers = _ANSWER_KINDS[f.type]
    if _disjoint(answers, _kinds(prop)) or (f.type == "boolean" and not (_fits(prop, True) or _fits(prop, False))):
        yield Finding("write-type", (*path, "type"),
                      f"no `{f.type}` answer fits `{f.name}` in context.schema ({shown}): the task could never be answered",
                      hint=f"use the field type `{f.name}`'s schema takes (a select of its values, say), or change its schema")


# --------------------------------------------------------------------------------------------
# sub-processes


#: one field through one filter whose result type is fixed: ``{{ items | length }}``
_FILTERED = re.compile(r"^\{\{\s*[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*\s*\|\s*([a-z_]+)\s*(?:\([^(){}]*\))?\s*\}\}$")
_FILTER_TYPES = {"length": "integer", "count": "integer", "wordcount": "integer", "int": "integer", "float": "number",
                 "string": "string", "upper": "string", "lower": "string", "trim": "string", "title": "string",
                 "capitalize": "string", "join": "string", "tojson": "string", "list": "array"}


def filtered_schema(value: Any) -> dict[str, Any] | None:
    """The schema of what ``{{ field | filter }}`` renders to, for a filter whose result type is
    fixed (``length`` an integer, ``upper`` a string…); None for anything else."""
    found = _FILTERED.match(value.strip()) if isinstance(value, str) else None
    kind = _FILTER_TYPES.get(found.group(1)) if found else None
    return {"type": kind} if kind else None


def _child_schema(node: ProcessNode, ws: Any) -> dict[str, Any] | None:
    """The context schema of the child a process node runs (None when it is not known statically)."""
    if node.process_definition is not None:
        return node.process_definition.context.schema_
    if node.process is None or node.process_version is not None:
        return None
    return _schema_of(node.process, ws)


def _child_definition(node: ProcessNode, ws: Any) -> ProcessDef | PipelineDef | None:
    """The child a process node runs, as a process or pipeline (a workflow lowered; None: unknown)."""
    if node.process_version is not None:
        return None  # a pinned version is read at run time
    defn = node.process_definition if node.process_definition is not None else \
        ws.get(node.process, "process", "pipeline", "workflow") if node.process else None
    if isinstance(defn, WorkflowDef):
        from compiler.lower import lower_workflow

        try:
            return lower_workflow(defn).pipeline
        except Exception:  # noqa: BLE001 - a workflow that does not lower is its own diagnostics' business
            return None
    return defn if isinstance(defn, (ProcessDef, PipelineDef)) else None


def _child_initial(node: ProcessNode, ws: Any) -> dict[str, Any]:
    """The ``context.initial`` of the child a process node runs (a workflow's literal vars)."""
    defn = _child_definition(node, ws)
    return defn.context.initial if defn is not None else {}


def _unset_returns(node: ProcessNode, child: ProcessDef | PipelineDef | None, path: DocPath) -> Iterator[Finding]:
    """What ``returns`` takes from the child's context must be set when every run of it completes
    (``maybe-unset``): ``returns.from`` fails the node on a missing field, and ``returns.context``
    would write nothing the parent's schema takes."""
    returns = node.returns
    if returns is None or child is None:
        return
    from compiler.passes.definite_assignment import set_at_completion

    sure = set_at_completion(child)
    name = child.process if isinstance(child, ProcessDef) else child.name
    taken: list[tuple[str, DocPath]] = []
    if returns.from_ and returns.from_.startswith("context.") and len(returns.from_) > len("context."):
        taken.append((returns.from_[len("context."):].split(".")[0], (*path, "returns", "from")))
    elif returns.context and not returns.from_:
        taken += [(f, (*path, "returns", "context", i)) for i, f in enumerate(returns.context) if f in node.writes]
    for field, where in taken:
        if field not in sure:
            yield Finding("maybe-unset", where,
                          f"`{field}` may be unset when a run of `{name}` completes: `returns` would have nothing to take",
                          hint=f"return a field `{name}` sets on every path to its end, or set `{field}` in its context.initial")


def _missing_inputs(node: ProcessNode, child: dict[str, Any], initial: dict[str, Any], path: DocPath) -> Iterator[Finding]:
    """A required input of the child that neither the node's ``input`` nor the child's initial
    context gives: the child refuses to start (``missing-field``)."""
    props, required = child.get("properties"), child.get("required")
    if not isinstance(props, dict) or not isinstance(required, list):
        return
    missing = [r for r in required if isinstance(r, str) and r in props and r not in initial and r not in (node.input or {})]
    if missing:
        yield Finding("missing-field", (*path, "input") if node.input else (*path, "process"),
                      f"the child `{node.process or 'process_definition'}` needs the input(s) "
                      f"{', '.join(f'`{m}`' for m in missing)}, which `input` does not give: it would refuse to start",
                      hint=f"add `input: {{{missing[0]}: ...}}`")


def _schema_of(name: str, ws: Any) -> dict[str, Any] | None:
    """The context schema of the process, pipeline or workflow called ``name`` (None: not known)."""
    defn = ws.get(name, "process", "pipeline", "workflow")
    if isinstance(defn, (ProcessDef, PipelineDef)):
        return defn.context.schema_
    if isinstance(defn, WorkflowDef):
        from compiler.lower import lower_workflow

        try:
            return lower_workflow(defn).pipeline.context.schema_
        except Exception:  # noqa: BLE001 - a workflow that does not lower is its own diagnostics' business
            return None
    return None


def _path_schema(schema: Any, dotted: str | tuple[str | int, ...]) -> dict[str, Any] | None:
    """The schema at a dotted field path (through declared object properties; an int step of a
    tuple path goes into a list's declared ``items``), root definitions kept."""
    head, *rest = dotted.split(".") if isinstance(dotted, str) else dotted
    prop = _field_schema(schema, str(head))
    for part in rest:
        if isinstance(part, int):
            nxt = prop.get("items") if isinstance(prop, dict) else None
        else:
            props = prop.get("properties") if isinstance(prop, dict) else None
            nxt = props.get(part) if isinstance(props, dict) else None
        if not isinstance(nxt, dict):
            return None
        prop = {**{k: schema[k] for k in ("$defs", "definitions") if k in schema}, **nxt}
    return prop


def _kinds(prop: dict[str, Any] | None) -> set[str] | None:
    """The JSON types a value of ``prop`` can have (None: unknown or any); integer ⊂ number."""
    if not isinstance(prop, dict) or "$ref" in prop or any(k in prop for k in ("anyOf", "oneOf", "allOf", "not")):
        return None
    kinds: set[str] | None
    if "const" in prop or "enum" in prop:
        values = [prop["const"]] if "const" in prop else prop["enum"] if isinstance(prop["enum"], list) else []
        kinds = {json_type(v) for v in values}
    else:
        kinds = _types(prop)
    if kinds is None:
        return None
    if "number" in kinds:
        kinds = kinds | {"integer"}
    return kinds


def _may_not_fit(source: dict[str, Any] | None, target: dict[str, Any] | None) -> bool:
    """Whether some value of the declared ``source`` schema can be refused by ``target``: a type
    ``source`` allows that ``target`` does not (a number, which may have a fraction, for an
    integer), a property ``target`` requires that ``source`` does not, recursively in the items
    of two arrays and in the properties both objects declare.
    Unknown on either side (no type, ``$ref``, combinators): never."""
    given, taken = _kinds(source), _kinds(target)
    if given is None or taken is None:
        return False
    assert source is not None and target is not None  # known kinds come from schemas
    limited = [target["const"]] if "const" in target else target.get("enum")
    if isinstance(limited, list):  # a field of listed values takes only a source of those values
        offered = [source["const"]] if "const" in source else source.get("enum")
        return not isinstance(offered, list) or any(v not in limited for v in offered)
    if not given <= taken and not (given - {"integer"} <= taken and "number" in taken):
        return True
    roots = {k: v for k, v in {**source, **target}.items() if k in ("$defs", "definitions")}
    hinted = source.get("$comment") == UNKNOWN_MEMBERS  # a tool's `dict`/`list` hint: its members trusted
    if given == {"array"} and isinstance(target.get("items"), dict):
        if isinstance(source.get("items"), dict):
            return _may_not_fit({**roots, **source["items"]}, {**roots, **target["items"]})
        # a declared list without `items` holds anything; typed items refuse some of it
        return not hinted and _refuses_some({**roots, **target["items"]})
    if given == {"object"}:
        needed, promised = target.get("required"), source.get("required")
        # a declared object without `properties` promises none of them; a hinted `dict` may hold them
        known = isinstance(source.get("properties"), dict) or not hinted
        if known and isinstance(needed, list) and needed and not set(needed) <= set(promised if isinstance(promised, list) else []):
            return True  # the target requires a property the source does not promise
        mine, theirs = source.get("properties"), target.get("properties")
        if isinstance(mine, dict) and isinstance(theirs, dict):
            return any(isinstance(mine.get(k), dict) and isinstance(v, dict) and _may_not_fit({**roots, **mine[k]}, {**roots, **v})
                       for k, v in theirs.items() if k in mine)
    return False


#: What a template of text and ``{{ }}`` renders: any string (a field of listed values may refuse it).
_TEXT: dict[str, Any] = {"type": "string"}


def _named_kinds(kinds: frozenset[str] | set[str] | None) -> str:
    """JSON types as a message says them: ``a string or an integer`` (a number covers integers)."""
    if not kinds:
        return "anything"
    shown = sorted(kinds - {"integer"} if "number" in kinds else kinds)
    return " or ".join(f"a{'n' if k[0] in 'aeiou' else ''} {k}" for k in shown)


def _refuses_some(schema: dict[str, Any]) -> bool:
    """Whether ``schema`` refuses some value: a type, listed values or required properties
    (unknown — ``$ref``, combinators — never)."""
    return _kinds(schema) is not None or bool(schema.get("required"))


def _disjoint(given: set[str] | None, taken: set[str] | None) -> bool:
    """Whether no value of the types ``given`` is of the types ``taken`` (unknown: never)."""
    if given is None or taken is None:
        return False
    return not (given & taken or ("integer" in given and "number" in taken))


def _fan_out(schema: Any, node: ForeachNode | BranchNode, path: DocPath, ws: Any) -> Iterator[Finding]:
    """A foreach runs over a list, and a fan-out's ``collect`` writes one: a field whose schema
    takes no array is refused at run time, and so is one whose items cannot take what is
    collected (an envelope object per item, or each body's output)."""
    if isinstance(node, ForeachNode) and "." not in node.foreach:
        over = _field_schema(schema, node.foreach)
        if _disjoint({"array"}, _kinds(over)):
            yield Finding("wrong-type", (*path, "foreach"),
                          f"`{node.foreach}` ({_shown(_strip(over or {}))}) is no list: the foreach would fail on its first run",
                          hint="name a field whose schema is `type: array`")
    into = node.collect if isinstance(node.collect, str) else node.collect.into if node.collect is not None else None
    target = _field_schema(schema, into) if into else None
    if target is not None and _disjoint({"array"}, _kinds(target)):
        where = (*path, "collect") if isinstance(node.collect, str) else (*path, "collect", "into")
        yield Finding("write-type", where,
                      f"`collect` writes a list into `{into}` ({_shown(_strip(target))}), which cannot take it",
                      hint=f"collect into a field of `type: array`, or change `{into}`'s schema")
        return
    items = target.get("items") if isinstance(target, dict) else None
    if target is None or not isinstance(items, dict):
        return
    bodies = [node.node] if isinstance(node, ForeachNode) else [arm.node for arm in node.branches]
    where = (*path, "collect") if isinstance(node.collect, str) else (*path, "collect", "into")
    item_schema = {**{k: target[k] for k in ("$defs", "definitions") if k in target}, **items}
    if not isinstance(node.collect, str) and node.collect is not None:  # an envelope: its keys are known
        outputs: list[dict[str, Any] | None] = [{"type": "object", "properties": {k: {} for k in node.collect.include},
                                                 "required": list(node.collect.include)}]
        what = "an envelope object per item"
    else:
        outputs = [_output_schema(body, ws) for body in bodies]
        what = "each body's output"
    if any(_may_not_fit(output, item_schema) for output in outputs if output is not None):
        yield Finding("write-type", where,
                      f"`collect` writes {what} into `{into}`, whose items ({_shown(_strip(items))}) cannot always take it",
                      hint=f"give `{into}` items of the type collected (or no `items`), or collect another field")


def _output_schema(body: Any, ws: Any) -> dict[str, Any] | None:
    """The schema of a fan-out body's output (what a plain ``collect`` keeps per item; None:
    unknown): a fixed update's or a model's answer holds the fields the body writes."""
    from compiler.ir import ToolNode

    if isinstance(body, (InteractionNode, AgentNode)):
        return {"type": "object", "properties": {w: {} for w in body.writes}, "required": list(body.writes)}
    if isinstance(body, ToolNode):
        if body.config is not None and body.config.context_update:
            keys = [str(k) for k in body.config.context_update]
            return {"type": "object", "properties": {k: {} for k in keys}, "required": keys}
        signature = ws.tools.signature(body.tool) if body.tool else None
        return signature.result_shape() if signature is not None else None
    if isinstance(body, ProcessNode):
        return None if body.returns is not None and body.returns.from_ else {"type": "object"}
    return None


def _chained_map(schema: Any, upstream: Any, trigger: OnCompleteTrigger, path: DocPath) -> Iterator[Finding]:
    for key, value in trigger.map.items():
        target = _field_schema(schema, key)
        if target is None:
            continue  # an unknown field is the triggers pass's (unknown-field)
        where = (*path, key)
        reference = _REFERENCE.match(value.strip()) if isinstance(value, str) else None
        if reference is not None:
            source = _path_schema(upstream, reference.group(1))
            if _may_not_fit(source, target):
                yield Finding("write-type", where,
                              f"`{reference.group(1)}` of `{trigger.definition}` ({_shown(_strip(source or {}))}) is passed "
                              f"whole to `{key}` ({_shown(_strip(target))}), which cannot always take it: a chained start "
                              "would be refused", hint=f"map a value of the type `{key}` takes, or change one of the schemas")
        elif (filtered := filtered_schema(value)) is not None and _may_not_fit(filtered, target):
            yield Finding("write-type", where,
                          f"`{value.strip()}` renders {_shown(filtered)} into `{key}` ({_shown(_strip(target))}), "
                          "which cannot always take it: a chained start would be refused",
                          hint=f"map a value of the type `{key}` takes")
        elif isinstance(value, str) and _has_template(value) and not _one_expression(value):
            if _may_not_fit(_TEXT, target):
                yield Finding("write-type", where,
                              f"the map renders text (a string) into `{key}` ({_shown(_strip(target))}), which cannot always "
                              "take it: a chained start would be refused",
                              hint=f"map exactly one `{{{{ field }}}}` of the type `{key}` takes")
        elif not _has_template(value) and not _fits(target, value):
            yield Finding("write-type", where,
                          f"the map value {_shown(value)} does not fit `{key}` ({_shown(_strip(target))})",
                          hint=f"map a value `{key}` accepts")


def _one_expression(value: str) -> bool:
    """Whether ``value`` is one ``{{ … }}`` and nothing else: it renders to its expression's native value."""
    stripped = value.strip()
    return stripped.startswith("{{") and stripped.endswith("}}") and stripped.count("{{") == 1 \
        and "{%" not in stripped and "{#" not in stripped


def _inputs(schema: Any, target_schema: Any, mapping: dict[str, Any], path: DocPath, whose: str) -> Iterator[Finding]:
    """Each value of ``mapping`` (templates over ``schema``) against the field of ``target_schema`` it
    is given to (a child's context, an interaction's input): one ``{{ field }}`` of a type the
    field may refuse, text for a field without strings, a literal it refuses."""
    for key, value in mapping.items():
        target = _field_schema(target_schema, key)
        if target is None:
            continue
        where = (*path, key)
        reference = _REFERENCE.match(value.strip()) if isinstance(value, str) else None
        if reference is not None:
            source = _path_schema(schema, reference.group(1))
            if _may_not_fit(source, target):
                yield Finding("write-type", where,
                              f"`{reference.group(1)}` ({_shown(_strip(source or {}))}) is passed whole to {whose} `{key}` "
                              f"({_shown(_strip(target))}), which cannot always take it",
                              hint=f"pass a value of the type {whose} `{key}` takes, or change one of the schemas")
        elif (filtered := filtered_schema(value)) is not None and _may_not_fit(filtered, target):
            yield Finding("write-type", where,
                          f"`{value.strip()}` renders {_shown(filtered)} into {whose} `{key}` "
                          f"({_shown(_strip(target))}), which cannot always take it",
                          hint=f"pass a value of the type {whose} `{key}` takes")
        elif isinstance(value, str) and _has_template(value) and not _one_expression(value):
            if _may_not_fit(_TEXT, target):
                yield Finding("write-type", where,
                              f"the input renders text (a string) into {whose} `{key}` ({_shown(_strip(target))}), "
                              "which cannot always take it", hint=f"pass exactly one `{{{{ field }}}}` of the type `{key}` takes")
        elif not _has_template(value) and not _fits(target, value):
            yield Finding("write-type", where,
                          f"the input value {_shown(value)} does not fit {whose} `{key}` ({_shown(_strip(target))})",
                          hint=f"pass a value {whose} `{key}` accepts")


def _sub_process(schema: Any, child: Any, node: ProcessNode, path: DocPath) -> Iterator[Finding]:
    yield from _inputs(schema, child, node.input or {}, (*path, "input"), "the child's")
    returns = node.returns
    writes = list(node.writes)
    if returns is not None and returns.from_ and len(writes) == 1:
        picked = returns.from_
        returned: dict[str, Any] | None
        if picked in ("outcome", "run_id"):
            returned, shown = {"type": "string"}, f"the child's `{picked}` (a string)"
        elif picked.startswith("context.") and len(picked) > len("context."):
            field = picked[len("context."):]
            returned = _path_schema(child, field)
            shown = f"the child's `{field}` ({_shown(_strip(returned or {}))})"
        else:
            return
        target = _field_schema(schema, writes[0])
        if target is not None and _may_not_fit(returned, target):
            yield Finding("write-type", (*path, "returns", "from"),
                          f"`returns.from: {picked}` writes {shown} into `{writes[0]}` ({_shown(_strip(target))}), which cannot always take it",
                          hint=f"return a field of the type `{writes[0]}` takes, or change one of the schemas")
    elif returns is not None and returns.context and not returns.from_:
        for i, field in enumerate(returns.context):
            if field not in writes:
                continue
            source, target = _field_schema(child, field), _field_schema(schema, field)
            if target is not None and _may_not_fit(source, target):
                yield Finding("write-type", (*path, "returns", "context", i),
                              f"the child's `{field}` ({_shown(_strip(source or {}))}) is returned into `{field}` "
                              f"({_shown(_strip(target))}), which cannot always take it",
                              hint=f"make the two `{field}` fields the same type")
