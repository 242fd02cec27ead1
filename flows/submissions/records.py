"""Submissions as the CLI, the dashboard, triggers and template runs use them.

A submission is made for a form of the definitions folder; the form's content is pinned as a
snapshot (``form_hash``), so :func:`view` and :func:`set_values` check against the form the
submission was made for. Every change is a new selected version (``manual`` from a person,
``import`` from the data a submission was created from); nothing is overwritten. A submission
merged from others (:mod:`flows.submissions.merging`) is read like any other.

After a submission is created (:func:`create`) or changed (:func:`set_values`, once per call),
the change is announced (:mod:`flows.moments`, ``submission.changed``): the
``on_submission_created`` / ``on_submission_updated`` triggers waiting for its form start their
runs from this process (:func:`flows.triggers.submissions.on_submission_changed`), and a Prefect
event is sent; ``tell=False`` skips that.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from compiler.ir import FormDef
from flows.moments import announce
from flows.store import definitions as definition_store
from flows.store import submissions as submission_store
from flows.store.errors import NotFound
from flows.store.models import Submission
from flows.store.submissions import Cell, CellValue, NewValue
from flows.submissions import shape
from flows.submissions.shape import SubmissionInvalid

SubmissionEvent = Literal["created", "updated"]


class FormNotFound(NotFound):
    """No form of that name in the definitions folder."""


def form_named(name: str, catalog: Any = None) -> tuple[FormDef, str]:
    """The form ``name`` of the definitions folder and the hash of its pinned content."""
    from compiler.errors import did_you_mean
    from flows.catalog import Catalog

    catalog = catalog or Catalog.load()
    unit = catalog.ws.named("form").get(name)
    if unit is None or not isinstance(unit.defn, FormDef):
        hint = did_you_mean(name, catalog.ws.named("form"))
        raise FormNotFound(f"no form named `{name}`" + (f"; {hint}" if hint else ""))
    return unit.defn, definition_store.snapshot_definition(unit.defn.model_dump(mode="json", by_alias=True,
                                                                                exclude_none=True))


def pinned_form(submission: Submission) -> FormDef:
    """The form a submission was made for, as it was then."""
    content = definition_store.get_snapshot(submission.form_hash)
    if content is None:
        raise NotFound(f"the form of submission {submission.id} is gone from the store")
    return FormDef.model_validate(content)


def create(form: FormDef, form_hash: str, data: Any, *, created_by: str | None, name: str | None = None,
           source_type: str = "import", tell: bool = True) -> str:
    """A new submission of ``form`` holding ``data`` (checked first: :class:`SubmissionInvalid`
    lists every problem with its path, and nothing is written)."""
    shape.check(form, data)
    values, entries = shape.to_values(form, data)
    sid = submission_store.create_submission(
        form_name=form.name, form_hash=form_hash, values=values, entries=entries, source_type=source_type,
        origin="manual" if source_type == "manual" else "import", name=name, created_by=created_by)
    if tell:
        announce_change("created", sid, created_by)
    return sid


@dataclass(frozen=True)
class View:
    """A submission with its form and the selected value of every item."""

    submission: Submission
    form: FormDef
    values: list[CellValue]
    entries: list[tuple[str, int]]

    def data(self) -> dict[str, Any]:
        """The selected values as form data."""
        return shape.to_data(self.form, ((v.cell, v.value) for v in self.values), self.entries)

    def value_at(self, cell: Cell) -> CellValue | None:
        return next((v for v in self.values if v.cell == cell), None)


def view(submission_id: str) -> View:
    sub = submission_store.require_submission(submission_id)
    return View(sub, pinned_form(sub), submission_store.selected_values(submission_id),
                submission_store.group_entries(submission_id))


def set_values(submission_id: str, changes: Sequence[tuple[Cell, Any] | NewValue], *, by: str | None,
               source_type: str = "manual", tell: bool = True, run_id: str | None = None) -> list[str]:
    """New selected versions of the changed items (the old ones kept). The submission as it
    would be after the change must still fit its form: otherwise :class:`SubmissionInvalid`
    and nothing is written. A change may be a :class:`NewValue` with its transformation (a
    template run writing back, ``run_id`` its run)."""
    current = view(submission_id)
    new = [c if isinstance(c, NewValue) else NewValue(c[0], c[1]) for c in changes]
    cells = {v.cell: v.value for v in current.values}
    for change in new:
        cells[change.cell] = change.value
    entries = sorted({*current.entries, *((c.cell.group, c.cell.entry) for c in new)})
    # a gap first: the data would renumber the entries after it, and name the wrong one
    problems = _gaps(current.form, entries) or shape.problems(current.form, shape.to_data(current.form, cells.items(), entries))
    if problems:
        raise SubmissionInvalid(problems)
    ids = submission_store.add_versions(submission_id, new, source_type=source_type, created_by=by, run_id=run_id)
    if tell:
        announce_change("updated", submission_id, by)
    return ids


def _gaps(form: FormDef, entries: Sequence[tuple[str, int]]) -> list[str]:
    """A repeating group's entries are 0, 1, 2 … with no gap (``points[5]`` of a 2-entry group)."""
    out = []
    for group in form.groups:
        got = sorted(e for g, e in entries if g == group.name)
        if got and got != list(range(len(got))):
            missing = next(i for i in range(len(got) + 1) if i not in got)
            out.append(f"{group.name}[{max(got)}]: entry {missing} comes first "
                       f"(a new entry of `{group.name}` is [{missing}])")
    return out


def export(submission_id: str) -> dict[str, Any]:
    """The submission as one JSON-able document: its form, its data, and per value where the
    selected version came from (a merged submission: the submissions it was merged from too)."""
    v = view(submission_id)
    sub = v.submission
    return {
        "id": sub.id, "form": sub.form_name, "name": sub.name, "origin": sub.origin,
        "merged_from": submission_store.merged_from(sub.id) if sub.origin == "merged" else [],
        "run_id": sub.run_id, "step_key": sub.step_key, "created_by": sub.created_by,
        "created_at": sub.created_at.isoformat(), "updated_at": sub.updated_at.isoformat(),
        "data": v.data(),
        "values": [{"path": shape.cell_path(c.cell, v.form), "value": c.value, "version_id": c.version_id,
                    "source_type": c.source_type, "source_id": c.source_id, "created_by": c.created_by,
                    "created_at": c.created_at.isoformat()} for c in v.values],
    }


def announce_change(event: SubmissionEvent, submission_id: str, who: str | None) -> list[str]:
    """Announce the change (:mod:`flows.moments`): the submission triggers waiting for its form
    start their runs, and a Prefect event is sent. What reacts never undoes the change. Returns
    the ids of the runs the triggers started."""
    started = announce("submission.changed", event, submission_id, who)
    return [run_id for ids in started if isinstance(ids, list) for run_id in ids]


__all__ = ["FormNotFound", "SubmissionInvalid", "View", "create", "export", "form_named",
           "pinned_form", "set_values", "view"]
