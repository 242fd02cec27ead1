"""What a template run knows about submissions: its input submission, and its steps' forms.

A template (seed 000) reads a submission of its ``input_form`` and each step writes a
submission of its ``output_form``. The compiler lowers a template to a pipeline and leaves in
the Plan what the runtime needs for that: ``metadata.input_form``, ``metadata.forms`` (every form
the template uses, as it was compiled) and per step node ``extras.output_form`` and
``extras.parent``.

Every template run has an input submission: ``ergon run TEMPLATE --submission ID`` reads that
one (its selected values become the context's ``input``); a run started with raw inputs first
records them as a new submission (``import``), so that the first step's values can cite them
like any others.
"""

from __future__ import annotations

from typing import Any

from compiler.ir import FormDef
from compiler.plan import Plan, PlanNode
from flows.store import definitions as definition_store


class NotATemplateInput(ValueError):
    """A submission given to a run that cannot take it (the message says why)."""


def is_template(plan: Plan) -> bool:
    return bool(plan.metadata and plan.metadata.get("lowered_from") == "template")


def form_of(plan: Plan, name: str) -> tuple[FormDef, str]:
    """A form the template uses, as compiled into the Plan, and the hash of its pinned content."""
    content = (plan.metadata or {}).get("forms", {}).get(name)
    if content is None:
        raise KeyError(f"template `{plan.name}` has no form `{name}` in its plan")
    return FormDef.model_validate(content), definition_store.snapshot_definition(content)


def input_form(plan: Plan) -> tuple[FormDef, str]:
    return form_of(plan, (plan.metadata or {})["input_form"])


def step_form(plan: Plan, node: PlanNode) -> tuple[FormDef, str] | None:
    """The output form of a template step's node (None for any other node)."""
    name = node.extras.get("output_form")
    return form_of(plan, name) if name and is_template(plan) else None


def run_input(plan: Plan, inputs: dict[str, Any], submission_id: str | None) -> dict[str, Any]:
    """The run's inputs: a given submission's selected values as ``input``; raises
    :class:`NotATemplateInput` when the submission does not fit the run."""
    if submission_id is None:
        return inputs
    from flows.submissions import records

    if not is_template(plan):
        raise NotATemplateInput(f"`{plan.name}` is a {plan.kind}: only templates read a submission "
                                "(--submission); pass a process its values with --input")
    if "input" in inputs:
        raise NotATemplateInput("give the template's input either as a submission (--submission) or as "
                                "`input` (--input), not both")
    view = records.view(submission_id)
    want = plan.metadata["input_form"]  # type: ignore[index]
    if view.submission.form_name != want:
        raise NotATemplateInput(f"submission {submission_id} is a `{view.submission.form_name}` submission; "
                                f"template `{plan.name}` reads `{want}` submissions")
    return {**inputs, "input": view.data()}


def record_input(plan: Plan, inputs: dict[str, Any], *, created_by: str | None) -> str | None:
    """The input submission of a template run started with raw (already checked) inputs."""
    if not is_template(plan) or "input" not in inputs:
        return None
    from flows.submissions import records

    form, digest = input_form(plan)
    return records.create(form, digest, inputs["input"], created_by=created_by, source_type="import", tell=False)
