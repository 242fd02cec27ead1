"""What a completed template run produces, by its ``output_type`` (seed 000).

The *final* steps are those no other step reads (no step names them as ``parent``); most
templates have one. When the run's steps have all completed:

* ``artifact`` — each final step's output is also stored as a versioned ``json`` artifact under
  its ``output_key`` (running the template again in the run — a replay is another run — adds
  a version);
* ``submission_update`` — each final value whose group and field the *input* form also has
  becomes a new selected version of the input submission's item (the old one kept), made by a
  ``copy`` transformation citing the final step's version, so the provenance runs on through it;
  the whole input submission must still fit its form, else the run fails with the reason and
  nothing is written;
* ``report`` — a markdown artifact ``report`` rendered from the final submission(s): each group
  as a table, each value with where it came from.
"""

from __future__ import annotations

from typing import Any

from compiler.ir import FormDef
from compiler.plan import PlanNode
from flows.store import submissions as submission_store
from flows.store.submissions import NewValue
from flows.submissions import records
from flows.submissions.shape import SubmissionInvalid, cell_path
from flows.submissions.template_runs import TemplateRun


def final_steps(template: TemplateRun) -> list[PlanNode]:
    """The template's steps no other step reads, in the template's order."""
    nodes = [n for n in template.plan.nodes.values() if template.is_step(n)]
    parents = {n.extras.get("parent") for n in nodes}
    return [n for n in nodes if n.id not in parents]


def produce(template: TemplateRun, context: dict[str, Any]) -> str | None:
    """Produce the run's output; the reason it could not (the run then fails), or None."""
    import flows.artifacts as artifacts

    kind = (template.plan.metadata or {}).get("output_type", "artifact")
    finals = [(node, submission_store.step_output(template.run_id, node.id)) for node in final_steps(template)]
    if kind == "artifact":
        for node, sid in finals:
            key = node.writes[0]
            artifacts.record(template.run_id, key, "json", context.get(key),
                             description=f"output of step `{node.id}`" + (f" (submission {sid})" if sid else ""))
    elif kind == "report":
        artifacts.record(template.run_id, "report", "markdown", report(template, finals),
                         description=f"report of `{template.plan.name}`")
    elif kind == "submission_update":
        try:
            update_input(template, finals)
        except SubmissionInvalid as exc:
            return ("output_type submission_update: the input submission would no longer fit its form: "
                    + "; ".join(exc.problems[:5]))
    return None


def update_input(template: TemplateRun, finals: list[tuple[PlanNode, str | None]]) -> list[str]:
    """New selected versions of the input submission from the final steps' matching values."""
    target = records.view(template.input_submission_id)
    fields = {(g.name, f.name): g.repeat for g in target.form.groups for f in g.fields}
    changes: list[NewValue] = []
    for node, sid in finals:
        if sid is None:
            continue
        form, _ = template.output_form(node)
        repeat = {g.name: g.repeat for g in form.groups}
        for v in submission_store.selected_values(sid):
            if fields.get((v.cell.group, v.cell.field)) == repeat.get(v.cell.group):
                changes.append(NewValue(v.cell, v.value, kind="copy", expression=f"{node.id}:{cell_path(v.cell, form)}",
                                        inputs=[v.version_id], meta={"output_submission_id": sid}))
    if not changes:
        return []
    return records.set_values(template.input_submission_id, changes, by=target.submission.created_by,
                              source_type="transformation", run_id=template.run_id)


def report(template: TemplateRun, finals: list[tuple[PlanNode, str | None]]) -> str:
    """Markdown of the final submissions: a table per group, each value with its source."""
    lines = [f"# {template.plan.name}", ""]
    for node, sid in finals:
        if sid is None:
            continue
        form, _ = template.output_form(node)
        values = submission_store.selected_values(sid)
        trans = {t.id: t.kind for t in submission_store.transformations_of(sid)}
        lines += [f"## {node.title or node.id}", "", f"Submission `{sid}` of form `{form.name}`.", ""]
        lines += _group_tables(form, values, trans)
    return "\n".join(lines).rstrip() + "\n"


def _group_tables(form: FormDef, values: list[Any], trans: dict[str, str]) -> list[str]:
    lines: list[str] = []
    for group in form.groups:
        mine = [v for v in values if v.cell.group == group.name]
        if not mine:
            continue
        lines += [f"### {group.label or group.name}", ""]
        if group.repeat:
            names = [f.name for f in group.fields]
            lines += ["| # | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
            for entry in sorted({v.cell.entry for v in mine}):
                row = {v.cell.field: v for v in mine if v.cell.entry == entry}
                lines.append(f"| {entry + 1} | " + " | ".join(_cell(row.get(n), trans) for n in names) + " |")
        else:
            lines += ["| field | value | source |", "|---|---|---|"]
            for f in group.fields:
                v = next((x for x in mine if x.cell.field == f.name), None)
                if v is not None:
                    lines.append(f"| {f.label or f.name} | {_text(v.value)} | {_source(v, trans)} |")
        lines.append("")
    return lines


def _text(value: Any) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def _source(v: Any, trans: dict[str, str]) -> str:
    return trans.get(v.source_id or "", v.source_type)


def _cell(v: Any, trans: dict[str, str]) -> str:
    return "" if v is None else f"{_text(v.value)} ({_source(v, trans)})"


def on_run_ending(template: TemplateRun | None, context: dict[str, Any], outcome: Any) -> str | None:
    """The ``run.ending`` moment (:mod:`flows.moments`): a template run the engine completed
    produces its ``output_type`` before it is recorded completed; the reason it could not."""
    if template is None or outcome.status != "completed":
        return None
    return produce(template, context)
