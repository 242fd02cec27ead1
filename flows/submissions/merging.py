"""Merging submissions: one new submission holding the values of several of one form.

A template run given several input submissions reads one submission made of them (seed 000: the
``merged`` source). Every group entry and every selected value of each source is copied, the
sources in the order given; each copy is a version whose ``source_type`` is ``merged`` and whose
``source_id`` is the version it was copied from, so a value's provenance leads back to the
original (:func:`flows.submissions.provenance.chain`). The sources are left as they were.

* A repeating group's entries are concatenated: the first source's entries, then the second's,
  numbered on (0, 1, 2 …).
* A field of a group that does not repeat is taken from the one source that holds it. Two sources
  holding the same such field is refused, naming the field and both submissions — equal values
  too, since the copy can cite only one of them.

:func:`plan` reads and checks the sources without writing anything; :meth:`Merge.write` records
the merged submission (its ``origin`` is ``merged``), so a caller can check everything else
before anything is written.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from compiler.ir import FormDef
from flows.store import submissions as submission_store
from flows.store.submissions import Cell, NewValue
from flows.submissions import shape


class MergeRefused(ValueError):
    """Submissions that cannot be merged: ``problems`` says why, one line each."""

    def __init__(self, problems: Sequence[str]):
        self.problems = list(problems)
        super().__init__("; ".join(self.problems))


@dataclass(frozen=True)
class Merge:
    """The merged submission of ``sources``, checked against ``form`` and not yet written."""

    form: FormDef
    form_hash: str
    sources: tuple[str, ...]
    values: tuple[NewValue, ...]
    entries: tuple[tuple[str, int], ...]

    def data(self) -> dict[str, Any]:
        """The merged values as form data."""
        return shape.to_data(self.form, ((v.cell, v.value) for v in self.values), self.entries)

    def write(self, *, created_by: str | None, name: str | None = None) -> str:
        """Record the merged submission; returns its id."""
        return submission_store.create_submission(
            form_name=self.form.name, form_hash=self.form_hash, values=list(self.values), entries=list(self.entries),
            source_type="merged", origin="merged", name=name, created_by=created_by)


def plan(submission_ids: Sequence[str], form: FormDef, form_hash: str) -> Merge:
    """The merge of ``submission_ids`` (submissions of ``form``) into a submission of ``form``
    pinned at ``form_hash``; :class:`MergeRefused` lists every reason it cannot be made."""
    ids = list(submission_ids)
    if not ids:
        raise MergeRefused(["a merge needs at least one submission"])
    problems = [f"submission {sid} is given {n} times" for sid, n in Counter(ids).items() if n > 1]
    subs = []
    for sid in dict.fromkeys(ids):
        sub = submission_store.get_submission(sid)
        if sub is None:
            problems.append(f"no submission {sid!r}")
        elif sub.form_name != form.name:
            problems.append(f"submission {sid} is a `{sub.form_name}` submission, not a `{form.name}` one")
        else:
            subs.append(sub)
    if problems:
        raise MergeRefused(problems)

    groups = {g.name: g for g in form.groups}
    fields = {g.name: {f.name for f in g.fields} for g in form.groups}
    values: list[NewValue] = []
    entries: dict[tuple[str, int], None] = {}
    held: dict[tuple[str, str], str] = {}  # a field of a group that does not repeat → the source holding it
    taken: Counter[str] = Counter()  # a repeating group → its entries copied so far
    for sub in subs:
        own = submission_store.group_entries(sub.id)
        cells = submission_store.selected_values(sub.id)
        where = {(c.group, c.entry) for c in (v.cell for v in cells)} | set(own)
        for group_name, entry in sorted(where):
            group = groups.get(group_name)
            if group is None:
                problems.append(f"submission {sub.id} has a group `{group_name}`, which form `{form.name}` has not")
            elif not group.repeat and entry != 0:
                problems.append(f"submission {sub.id} has entries of `{group_name}`, which does not repeat "
                                f"in form `{form.name}`")
        shift = {name: taken[name] for name, g in groups.items() if g.repeat}
        for group_name, entry in sorted(where):
            if group_name in groups:
                entries[(group_name, shift.get(group_name, 0) + entry)] = None
        for cv in cells:
            cell = cv.cell
            if cell.group not in groups:
                continue  # named above
            if cell.field not in fields[cell.group]:
                problems.append(f"submission {sub.id} holds `{shape.cell_path(cell, form)}`: group `{cell.group}` "
                                f"of form `{form.name}` has no field `{cell.field}`")
                continue
            if not groups[cell.group].repeat:
                first = held.setdefault((cell.group, cell.field), sub.id)
                if first != sub.id:
                    problems.append(f"`{cell.group}.{cell.field}` is held by submission {first} and by submission "
                                    f"{sub.id}: a field of a group that does not repeat is taken from one "
                                    "submission only")
                    continue
            values.append(NewValue(Cell(cell.group, shift.get(cell.group, 0) + cell.entry, cell.field), cv.value,
                                   copied_from=cv.version_id))
        for name in shift:
            taken[name] += 1 + max((e for g, e in where if g == name), default=-1)
    if problems:
        raise MergeRefused(problems)
    merged = Merge(form, form_hash, tuple(sub.id for sub in subs), tuple(values), tuple(entries))
    found = shape.problems(form, merged.data())
    if found:
        raise MergeRefused([f"the merged submission would not fit form `{form.name}`: {p}" for p in found])
    return merged

