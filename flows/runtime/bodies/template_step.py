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
"""

from __future__ import annotations

from typing import Any

from compiler.plan import PlanNode
from flows.runtime.bodies.agent import agent_task, run_task
from flows.runtime.effects import Effect, Services
from flows.runtime.errors import NodeFailed
from flows.secrets.redaction import redact
from flows.store import submissions as submission_store
from flows.store import visits as visit_store
from flows.store.submissions import NewValue
from flows.submissions.citations import cited_schema, input_block, read_answer, unknown_refs


async def run(node: PlanNode, context: dict[str, Any], services: Services, visit_id: str | None) -> Effect:
    template = services.template
    assert template is not None  # dispatched here only for template runs (flows.runtime.bodies.leaf_effect)
    form, form_hash = template.output_form(node)
    input_id, in_form = template.input_of(node)
    if input_id is None:
        raise NodeFailed(f"template step `{node.id}`: step `{node.extras.get('parent')}` left no output submission "
                         "to read", kind="internal")
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
    step = node.title or node.id
    submission = submission_store.submission_rows(
        form_name=form.name, form_hash=form_hash, entries=entries, source_type="transformation",
        origin="transformation", name=f"{services.process_name} • {step}", created_by=services.started_by,
        run_id=services.run_id, visit_id=visit_id, step_key=node.id, llm_call_id=call,
        values=[NewValue(c.cell, c.value, kind="llm_extract", inputs=list(c.refs),
                         meta={"input_submission_id": input_id}) for c in cited])
    return Effect(update={key: plain}, output=result.output, submission=submission,
                  input={"prompt": task.prompt, "tools": task.tools, "input_submission_id": input_id})
