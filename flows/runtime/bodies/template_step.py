"""A template step (seed 000): an agent whose answer cites, value by value, the input it came from.

The step reads its input submission (its parent step's output, or the run's input submission),
shows the model those values with their version ids, and asks for its output form with every
field as ``{value, refId}`` (:mod:`flows.submissions.citations`). An answer citing a refId that
is not a value of the step's input is refused like a schema error: the model is told which in
its repair turn, and a second bad answer fails the node with nothing written.

The context gets the plain form data (``{value}`` unwrapped) under the step's ``output_key``, so
later prompts read it as before. The step's output submission (one ``transformation`` version
per value, each with an ``llm_extract`` transformation naming the visit, the answering model call
and the cited versions) travels in the :class:`~flows.runtime.effects.Effect` and is written in
the visit's checkpoint transaction: a step is done with its output submission, or not done.

A step without a model (``mapping:``, lowered to a ``tool`` node whose ``context_update`` is
the mapping) renders its expressions like any tool node, and each value records how it was
made (:func:`mapping_provenance`): ``copy`` for a bare reference to an input value
(``{{ input.customer.name }}``), ``map`` for one passed through filters (``| trim``),
``aggregate`` for one reduced by ``sum``, ``min``, ``max``, ``length``, ``count``, ``unique`` or
``join``, ``formula`` for anything else computed; the expression is kept, and the input values it read are its inputs.
"""

from __future__ import annotations

import re
from typing import Any

from compiler.plan import PlanNode
from compiler.templates import analyse
from flows.runtime.bodies import tool
from flows.runtime.bodies.agent import agent_task, run_task
from flows.runtime.effects import Effect, Services
from flows.runtime.errors import NodeFailed
from flows.secrets.redaction import redact
from flows.store import submissions as submission_store
from flows.store import visits as visit_store
from flows.store.submissions import Cell, CellValue, NewValue
from flows.submissions import shape
from flows.submissions.citations import cited_schema, input_block, read_answer, unknown_refs


async def run(node: PlanNode, context: dict[str, Any], services: Services, visit_id: str | None) -> Effect:
    template = services.template
    assert template is not None  # dispatched here only for template runs (flows.runtime.bodies.leaf_effect)
    if node.type == "tool":
        return await _mapping(node, context, services, visit_id)
    form, form_hash = template.output_form(node)
    input_id, in_form = _input_of(node, template)
    values = submission_store.selected_values(input_id)
    allowed = {v.version_id for v in values}
    key = node.writes[0]
    schema = {"type": "object", "properties": {key: cited_schema(form)}, "required": [key], "additionalProperties": False}

    def check(answer: dict[str, Any]) -> list[str]:
        _, cited, _ = read_answer(form, answer[key])
        return unknown_refs(form, cited, allowed, prefix=f"{key}.")

    task = agent_task(node, context, services, visit_id)
    task.prompt = f"{task.prompt.rstrip()}\n\n{input_block(in_form, values)}"
    task.result_schema, task.check_answer = schema, check
    result = await run_task(node, task, services, visit_id)
    plain, cited, entries = read_answer(form, redact(result.output[key]))
    call = visit_store.last_answer_call(visit_id) if visit_id is not None else None
    made = [NewValue(c.cell, c.value, kind="llm_extract", inputs=list(c.refs), meta={"input_submission_id": input_id})
            for c in cited]
    submission = _output_rows(node, services, visit_id, form.name, form_hash, made, entries, llm_call_id=call)
    return Effect(update={key: plain}, output=result.output, submission=submission,
                  input={"prompt": task.prompt, "tools": task.tools, "input_submission_id": input_id})


async def _mapping(node: PlanNode, context: dict[str, Any], services: Services, visit_id: str | None) -> Effect:
    template = services.template
    form, form_hash = template.output_form(node)
    input_id, _ = _input_of(node, template)
    effect = await tool.run(node, context, services, visit_id)
    key = node.writes[0]
    data = redact(effect.update.get(key))
    problems = shape.problems(form, data)
    if problems:  # before anything is built from it (the engine would refuse the write too)
        raise NodeFailed(f"mapping step `{node.id}` made a `{form.name}` that does not fit its form: "
                         + "; ".join(problems[:5]), kind="definition")
    values, entries = shape.to_values(form, data)
    inputs = submission_store.selected_values(input_id)
    mapping: dict[str, str] = node.extras.get("mapping") or {}
    root = template.input_key(node)
    made = []
    for v in values:
        expr = mapping.get(f"{v.cell.group}.{v.cell.field}") or mapping.get(v.cell.group) or ""
        kind, refs = mapping_provenance(expr, root, v.cell, inputs)
        made.append(NewValue(v.cell, v.value, kind=kind, expression=expr, inputs=refs,
                             meta={"input_submission_id": input_id}))
    submission = _output_rows(node, services, visit_id, form.name, form_hash, made, entries)
    return Effect(update={key: data}, output=effect.output, submission=submission,
                  input={"mapping": mapping, "input_submission_id": input_id})


def _input_of(node: PlanNode, template: Any) -> tuple[str, Any]:
    """The submission the step reads and its form (a parent step that left none is a defect)."""
    input_id, form = template.input_of(node)
    if input_id is None:
        raise NodeFailed(f"template step `{node.id}`: step `{node.extras.get('parent')}` left no output submission "
                         "to read", kind="internal")
    return input_id, form


def _output_rows(node: PlanNode, services: Services, visit_id: str | None, form_name: str, form_hash: str,
                 made: list[NewValue], entries: list[tuple[str, int]], llm_call_id: str | None = None) -> Any:
    """The step's output submission (``{template} • {step}``), unwritten: the checkpoint writes it."""
    return submission_store.submission_rows(
        form_name=form_name, form_hash=form_hash, entries=entries, source_type="transformation",
        origin="transformation", name=f"{services.process_name} • {node.title or node.id}",
        created_by=services.started_by, run_id=services.run_id, visit_id=visit_id, step_key=node.id,
        llm_call_id=llm_call_id, values=made)


_AGGREGATES = re.compile(r"\|\s*(sum|min|max|length|count|unique|join)\b")
_BARE = re.compile(r"^\{\{\s*[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*\s*\}\}$")
_FILTERED = re.compile(r"^\{\{\s*[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*(?:\s*\|\s*[A-Za-z_]\w*(?:\([^(){}]*\))?)+\s*\}\}$")


def mapping_provenance(expr: str, root: str, cell: Cell, inputs: list[CellValue]) -> tuple[str, list[str]]:
    """(transformation kind, cited input versions) of one value a mapping expression made.

    The citations are the input values the expression reads under ``root`` (the step's input
    field): ``root.group.field`` cites that field of the group's entries; a whole repeating
    group (``root.group``) cites, for entry *i*, the same field of entry *i* when copied
    as it is, else the fields of the group the expression names (``sum(attribute="amount")``),
    else every value of the group."""
    text = expr.strip()
    kind = "copy" if _BARE.match(text) else "map" if _FILTERED.match(text) else "formula"
    if kind != "copy" and _AGGREGATES.search(text):
        kind = "aggregate"
    paths = [p for p in analyse(text).paths if p[0] == root]
    longest = [p for p in paths if not any(len(q) > len(p) and q[:len(p)] == p for q in paths)]
    refs: list[str] = []
    for p in longest:
        if len(p) >= 3:
            refs += [v.version_id for v in inputs if v.cell.group == p[1] and v.cell.field == p[2]]
        elif kind == "copy":  # the whole group, entry by entry
            refs += [v.version_id for v in inputs if v.cell == Cell(p[1], cell.entry, cell.field)]
        else:  # the fields of the group the expression names (`sum(attribute="amount")`), else all
            group = [v for v in inputs if v.cell.group == p[1]]
            named = [v for v in group if re.search(rf"\b{re.escape(v.cell.field)}\b", text)]
            refs += [v.version_id for v in (named or group)]
    return kind, list(dict.fromkeys(refs))
