"""The `tool_calls` pass: a tool node calls a project Python tool with arguments it takes, and its
result fits the field it is written to.

The runtime validates a tool's arguments against its type hints and fails the node as a
``definition`` error when they do not fit; it refuses a result that ``context.schema`` does not
take for the ``output`` field the same way. From the tool's hints (read statically,
:mod:`compiler.tool_signatures`) and the context schema, these are certain before any run:

* ``tool-params`` — an argument the tool has no parameter for (unless it takes ``**kwargs``); a
  parameter without a default that ``input`` does not give; an argument whose value can be of a
  type the parameter refuses: a literal of another type, exactly one ``{{ field }}`` (which passes
  the field's value through, native type and all) whose declared type is not among the
  parameter's — a ``number`` field for an ``int`` parameter included, as 2.5 would be refused —
  or text around a template (always a string) for a parameter that takes no strings;
* ``write-type`` — ``output: field`` when the tool's declared result can be of a type the field
  refuses (an ``int`` result into a string field; a ``float`` one into an integer field).

A parameter or result without a hint the reader understands is not checked. A foreach body's
item (``{{ item }}``) is typed by the items of the list it runs over, where its schema says.
Built-in tools are checked the same way, from the table of their hints
(:mod:`compiler.builtin_signatures`, which ``ToolCatalogue.signature`` returns for them); tools
served over HTTP are checked at run time.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from compiler.errors import Finding
from compiler.ir import BranchNode, ForeachNode, PipelineDef, ProcessDef, ToolNode
from compiler.passes.write_types import (
    _REFERENCE,
    _field_schema,
    _has_template,
    _shown,
    _strip,
    _kinds,
    _may_not_fit,
    _named_kinds,
    _one_expression,
    _path_schema,
    filtered_schema,
    scoped_schema,
)
from compiler.tool_signatures import Parameter, Signature, json_type
from compiler.walk import NodeSite, iter_definitions, iter_nodes


def check(unit, ws) -> Iterator[Finding]:
    if not isinstance(unit.defn, (ProcessDef, PipelineDef)):
        return
    for graph, base in iter_definitions(unit.defn):
        schema = graph.context.schema_
        for site in iter_nodes(graph, base):
            node = site.node
            if not isinstance(node, ToolNode) or node.tool is None or node.config is not None and node.config.context_update:
                continue
            schema = scoped_schema(graph.context.schema_, site)
            signature = ws.tools.signature(node.tool)
            if signature is None:
                continue
            args = node.input or {}
            for key, value in args.items():
                param = signature.parameters.get(key)
                if param is None:
                    if not signature.any_keyword:
                        yield Finding("tool-params", (*site.path, "input", key), f"tool `{node.tool}` has no parameter `{key}`",
                                      hint=_takes(node.tool, signature.parameters))
                    continue
                problem = _argument_problem(schema, param, value)
                if problem:
                    yield Finding("tool-params", (*site.path, "input", key), f"`{key}` of tool `{node.tool}`: {problem}",
                                  hint=f"give `{key}` a value of the type the tool's hint declares ({_named_kinds(param.kinds)})")
            missing = [p.name for p in signature.parameters.values() if p.required and p.name not in args]
            if missing:
                yield Finding("tool-params", (*site.path, "input") if node.input else (*site.path, "tool"),
                              f"tool `{node.tool}` needs {', '.join(f'`{m}`' for m in missing)}, which `input` does not give",
                              hint=_takes(node.tool, signature.parameters))
            if node.output and signature.result is not None and not _collected(site):
                target = _field_schema(schema, node.output)
                if _may_not_fit(signature.result_shape(), target):
                    yield Finding("write-type", (*site.path, "output"),
                                  f"tool `{node.tool}` returns {_named_kinds(signature.result)}{_items(signature)}, which `{node.output}` "
                                  f"({_shown(_strip(target or {}))}) cannot always take: the write would be refused",
                                  hint=f"write the result into a field of its type, or change `{node.output}`'s schema")


def _argument_problem(schema: Any, param: Parameter, value: Any) -> str | None:
    """Why ``value`` can be refused by ``param`` (None: it fits, or that is not certain)."""
    if param.kinds is None:
        return None
    accepted = param.kinds | ({"integer"} if "number" in param.kinds else set())
    if not _has_template(value):
        given = json_type(value)
        return None if given in accepted else f"the value {value!r} is {_named_kinds({given})}; the parameter takes {_named_kinds(param.kinds)}"
    if not isinstance(value, str):  # a list or mapping with templates inside: an array or an object
        given = "array" if isinstance(value, list) else "object"
        return None if given in accepted else f"the value is {_named_kinds({given})}; the parameter takes {_named_kinds(param.kinds)}"
    if not _one_expression(value):
        return None if "string" in accepted else f"the text it renders (a string) is not {_named_kinds(param.kinds)}"
    reference = _REFERENCE.match(value.strip())
    if reference is None:
        filtered = filtered_schema(value)
        kinds = _kinds(filtered) if filtered is not None else None
        if kinds is None or kinds <= accepted:
            return None
        return f"`{value.strip()}` renders {_named_kinds(kinds)}, which the parameter ({_named_kinds(param.kinds)}) refuses"
    source = _path_schema(schema, reference.group(1))
    if source is None:  # not a context field (a fan-out's `item`), or one the templates pass refuses
        return None
    kinds = _kinds(source)
    if kinds is None or kinds <= accepted:
        return None
    return f"`{reference.group(1)}` can be {_named_kinds(kinds - accepted)}, which the parameter ({_named_kinds(param.kinds)}) refuses"


def _collected(site: NodeSite) -> bool:
    """Whether a fan-out collects this body's results (they go to its envelope, not to `output`)."""
    parent = site.parent.node if site.parent is not None else None
    return isinstance(parent, (ForeachNode, BranchNode)) and parent.collect is not None


def _items(signature: Signature) -> str:
    """`` (list items: object)`` for a tool hinted ``-> list[dict]``; empty otherwise."""
    return f" (list items: {' or '.join(sorted(signature.result_items))})" if signature.result_items else ""


def _takes(tool: str, params: dict[str, Parameter]) -> str:
    if not params:
        return f"`{tool}` takes no arguments"
    shown = [f"`{p.name}`" + ("" if p.required else " (optional)") for p in params.values()]
    return f"`{tool}` takes {', '.join(shown)}"

