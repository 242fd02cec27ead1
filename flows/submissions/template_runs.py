"""What a template run knows about submissions: its input submission, and its steps' forms.

A template (seed 000) reads a submission of its ``input_form`` and each step writes a
submission of its ``output_form``. The compiler lowers a template to a pipeline and leaves in
the Plan what the runtime needs for that: ``metadata.input_form``, ``metadata.forms`` (every form
the template uses, as it was compiled) and per step node ``extras.output_form`` and
``extras.parent``.

Every template run has an input submission: ``ergon run TEMPLATE --submission ID`` reads that
one (its selected values become the context's ``input``); given several (``--submission A
--submission B``), the run reads a new submission merged from them
(:mod:`flows.submissions.merging`), recorded with the run; a run started with raw inputs first
records them as a new submission (``import``), so that the first step's values can cite them
like any others.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from compiler.ir import FormDef
from compiler.plan import Plan, PlanNode
from flows.store import definitions as definition_store

if TYPE_CHECKING:
    from flows.submissions.merging import Merge


class NotATemplateInput(ValueError):
    """Submissions given to a run that cannot take them: ``problems`` says why, one line each."""

    def __init__(self, *problems: str):
        self.problems = list(problems)
        super().__init__("; ".join(self.problems))


@dataclass(frozen=True)
class GivenInput:
    """The input submission a template run was given: one that exists (``submission_id``), or
    the merge of several (``merge``), written only when the run is recorded (:meth:`record`)."""

    #: its selected values as form data: the run's ``input``
    data: dict[str, Any]
    submission_id: str | None = None
    merge: Merge | None = None

    def record(self, plan: Plan, *, created_by: str | None) -> str:
        """The id of the run's input submission, writing the merged one first."""
        if self.submission_id is not None:
            return self.submission_id
        assert self.merge is not None
        return self.merge.write(created_by=created_by,
                                name=f"{plan.name} • input merged from {len(self.merge.sources)} submissions")


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


def given_input(plan: Plan, inputs: dict[str, Any], submissions: str | Sequence[str] | None) -> GivenInput | None:
    """The input submission of a run given ``submissions`` (one id, or several to merge; None or
    none: the run was given raw inputs). Raises :class:`NotATemplateInput` naming every
    submission that does not fit the run, and :class:`~flows.store.errors.NotFound` for one
    unknown id."""
    ids = [submissions] if isinstance(submissions, str) else list(submissions or ())
    if not ids:
        return None
    from flows.store import submissions as submission_store
    from flows.submissions import merging, records

    if not is_template(plan):
        raise NotATemplateInput(f"`{plan.name}` is a {plan.kind}: only templates read a submission "
                                "(--submission); pass a process its values with --input")
    if "input" in inputs:
        raise NotATemplateInput("give the template's input either as a submission (--submission) or as "
                                "`input` (--input), not both")
    want = plan.metadata["input_form"]  # type: ignore[index]

    def wrong_form(submission_id: str, form_name: str) -> str:
        return (f"submission {submission_id} is a `{form_name}` submission; template `{plan.name}` reads "
                f"`{want}` submissions")

    if len(ids) == 1:
        view = records.view(ids[0])
        if view.submission.form_name != want:
            raise NotATemplateInput(wrong_form(ids[0], view.submission.form_name))
        return GivenInput(view.data(), submission_id=ids[0])
    problems = []
    for sid in dict.fromkeys(ids):
        sub = submission_store.get_submission(sid)
        if sub is None:
            problems.append(f"no submission {sid!r}")
        elif sub.form_name != want:
            problems.append(wrong_form(sid, sub.form_name))
    if problems:
        raise NotATemplateInput(*problems)
    form, digest = input_form(plan)
    try:
        merge = merging.plan(ids, form, digest)
    except merging.MergeRefused as exc:
        raise NotATemplateInput(*exc.problems) from exc
    return GivenInput(merge.data(), merge=merge)


def record_input(plan: Plan, inputs: dict[str, Any], *, created_by: str | None) -> str | None:
    """The input submission of a template run started with raw (already checked) inputs."""
    if not is_template(plan) or "input" not in inputs:
        return None
    from flows.submissions import records

    form, digest = input_form(plan)
    return records.create(form, digest, inputs["input"], created_by=created_by, source_type="import", tell=False)


class TemplateRun:
    """The submissions side of one template run, as its step bodies ask for it
    (:mod:`flows.runtime.bodies.template_step`)."""

    def __init__(self, plan: Plan, run_id: str, input_submission_id: str):
        self.plan = plan
        self.run_id = run_id
        self.input_submission_id = input_submission_id

    @classmethod
    def for_run(cls, plan: Plan, run: Any) -> TemplateRun | None:
        """The template run of ``run`` (None for any other definition, or a run without an input
        submission: one recorded before submissions existed)."""
        if not is_template(plan) or getattr(run, "input_submission_id", None) is None:
            return None
        return cls(plan, run.id, run.input_submission_id)

    def is_step(self, node: PlanNode) -> bool:
        return bool(node.extras.get("output_form"))

    def output_form(self, node: PlanNode) -> tuple[FormDef, str]:
        return form_of(self.plan, node.extras["output_form"])

    def input_of(self, node: PlanNode) -> tuple[str | None, FormDef]:
        """The submission a step reads (its parent's output, else the run's input) and its form."""
        parent = node.extras.get("parent")
        if parent is None:
            return self.input_submission_id, input_form(self.plan)[0]
        from flows.store import submissions as submission_store

        return (submission_store.step_output(self.run_id, parent),
                form_of(self.plan, self.plan.nodes[parent].extras["output_form"])[0])

    def input_key(self, node: PlanNode) -> str:
        """The context field holding the step's input data (``input``, or the parent's output)."""
        parent = node.extras.get("parent")
        return "input" if parent is None else self.plan.nodes[parent].writes[0]


def on_run_opened(plan: Plan, run_id: str, context: dict[str, Any]) -> TemplateRun | None:
    """The ``run.opened`` moment (:mod:`flows.moments`): a template run's submissions, None for
    another run. A run nobody recorded an input submission for (a deployment's, a schedule's)
    records its ``input`` as one first."""
    from flows.store import runs as run_store

    if not is_template(plan):
        return None
    run = run_store.require_run(run_id)
    if run.input_submission_id is None and "input" in context:
        sid = record_input(plan, context, created_by=run.started_by)
        run_store.update_run(run_id, input_submission_id=sid)
        run.input_submission_id = sid
    return TemplateRun.for_run(plan, run)
