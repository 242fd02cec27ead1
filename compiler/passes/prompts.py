"""The `prompts` pass: each interaction prompt segment, in its own format (compiler.prompts).

* ``template-syntax`` — a Handlebars or JST segment does not parse or compile (a Jinja2
  segment's syntax is the ``templates`` pass's), with the line and column inside the template;
* ``unsupported-template`` — ``${…}`` in a Jinja2 segment, which would reach the model as
  written: the hint is ``content_type: jst``;
* ``unknown-field`` — a segment reads a field that ``input_schema`` does not declare (checked when
  it declares ``properties``; inside a Handlebars ``#each``/``#with``, against the item's or the
  value's schema where it is known: :mod:`compiler.prompts.handlebars`); and, for an interaction
  that declares no input fields, a segment that reads a field the calling node's ``input`` does
  not pass (reported on the node: its run would fail on the undefined field).

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
    """Nodes calling an interaction without declared input fields pass every field its prompts read."""
    for graph, base in iter_definitions(defn):
        for site in iter_nodes(graph, base):
            node = site.node
            if not isinstance(node, (InteractionNode, AgentNode)) or not node.interaction:
                continue
            name = node.interaction
            called = ws.get(name, "interaction")
            if not isinstance(called, InteractionDef) or declared_fields(called.input_schema) is not None:
                continue
            passed = sorted(node.input or {})
            given = {"type": "object", "properties": {key: {} for key in passed}}
            missing = sorted({p.name for segment in called.prompts for p in problems(segment, given)
                              if p.code == "unknown-field" and p.name})
            for field in missing:
                yield Finding("unknown-field", (*site.path, "input") if node.input else (*site.path, "interaction"),
                              f"interaction `{name}` reads `{field}` in its prompt, which this node's `input` does not pass "
                              "(the interaction declares no input fields): the call would fail on it",
                              hint=f"pass `{field}` in `input`, or declare the interaction's `input_schema`")
