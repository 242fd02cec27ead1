"""The `prompts` pass: each interaction prompt segment, in its own format (compiler.prompts).

* ``template-syntax`` — a Handlebars or JST segment does not parse or compile (a Jinja2
  segment's syntax is the ``templates`` pass's), with the line and column inside the template;
* ``unsupported-template`` — ``${…}`` in a Jinja2 segment, which would reach the model as
  written: the hint is ``content_type: jst``;
* ``unknown-field`` — a segment reads a field that ``input_schema`` does not declare (checked when
  it declares ``properties``; inside a Handlebars ``#each``/``#with``, against the item's or the
  value's schema where it is known: :mod:`compiler.prompts.handlebars`); and a segment that reads
  a field the calling node's ``input`` does not pass (reported on the node: the call would fail
  on the undefined field);
* ``missing-field`` — a node calling an interaction without one of its required inputs.

Positions: for a ``|`` block scalar, the file line and column of the place in the template;
elsewhere the template's string, with the line and column named in the message.
"""

from __future__ import annotations

from collections.abc import Iterator

from compiler.errors import Finding
from compiler.ir import AgentNode, InteractionDef, InteractionNode, PipelineDef, ProcessDef
from compiler.passes.templates import located, name_position
from compiler.prompts import problems
from compiler.prompts.fields import declared_fields
from compiler.walk import iter_definitions, iter_nodes


def check(unit, ws) -> Iterator[Finding]:
    defn = unit.defn
    if isinstance(defn, (ProcessDef, PipelineDef)):
        yield from _callers(defn, ws)
        return
    if not isinstance(defn, InteractionDef):
        return
    for i, segment in enumerate(defn.prompts):
        path = ("prompts", i, "template")
        for p in problems(segment, defn.input_schema):
            line, column = (p.line, p.column) if p.line is not None else name_position(segment.template, p.name or "")
            yield located(unit, p.code, path, p.message, line=line, column=column, hint=p.hint)


def _callers(defn: ProcessDef | PipelineDef, ws) -> Iterator[Finding]:
    """A node calling a named interaction passes its required inputs and every field its prompts
    read (a prompt fails on a field it is not given, declared or not). An interaction node passes
    its ``input``; an agent node its ``input``, its ``prompt`` and the context's fields."""
    for graph, base in iter_definitions(defn):
        for site in iter_nodes(graph, base):
            node = site.node
            if not isinstance(node, (InteractionNode, AgentNode)) or not node.interaction:
                continue
            name = node.interaction
            called = ws.get(name, "interaction")
            if not isinstance(called, InteractionDef):
                continue
            passed = sorted(node.input or {})
            if isinstance(node, AgentNode):  # an agent's interaction sees the context and `prompt` too
                passed = sorted({*passed, "prompt", *((graph.context.schema_ or {}).get("properties") or {})})
            where = (*site.path, "input") if node.input else (*site.path, "interaction")
            declared = declared_fields(called.input_schema)
            required = (called.input_schema or {}).get("required") if declared is not None else None
            for field in [r for r in required or [] if isinstance(r, str) and r not in passed]:
                yield Finding("missing-field", where, f"interaction `{name}` requires `{field}`, which this node's `input` "
                              "does not pass: the call would be refused", hint=f"pass `{field}` in `input`")
            # every format also sees `_model` (and it keeps the property list non-empty: "declares none")
            given = {"type": "object", "properties": {key: {} for key in [*passed, "_model"]}}
            missing = sorted({p.name for segment in called.prompts for p in problems(segment, given)
                              if p.code == "unknown-field" and p.name and (declared is None or p.name in declared)})
            for field in missing:
                if required and field in required:
                    continue  # said above
                yield Finding("unknown-field", where,
                              f"interaction `{name}` reads `{field}` in its prompt, which this node's `input` does not pass: "
                              "the call would fail on it", hint=f"pass `{field}` in `input`, or do not read it in the prompt")
