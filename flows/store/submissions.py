"""Submissions (instances of forms), their value versions, and the transformations behind them.

The shape (seed 000): a submission has groups (a repeating group one row per entry), a group
has items (one per field), an item has versions; one version per item is *selected* (its
current value) and a new value adds a version and moves the selection, so nothing is lost.
A version made by a template step names its :class:`~flows.store.models.Transformation`
(``source_id``), which names the visit, the model call and the input versions it read; a
``merged`` version (a copy in a submission merged from others) names the version it was copied
from.

Two ways in:

* :func:`create_submission` / :func:`add_versions` write in a transaction of their own (the CLI,
  the dashboard, a run's ``submission_update``);
* :func:`submission_rows` builds the rows of a step's output submission without writing them, so
  the run's recorder inserts them (:func:`insert_rows`) in the visit's checkpoint transaction:
  a step is either done with its output submission, or not done and without one.

Values are addressed by :class:`Cell` ``(group, entry, field)``; ``entry`` is 0 in a group that
does not repeat.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple

import sqlalchemy as sa
from sqlmodel import SQLModel, col, select

from flows.store._common import check, page
from flows.store.db import connection, session
from flows.store.errors import NotFound
from flows.store.models import (
    SUBMISSION_ORIGINS,
    TRANSFORMATION_KINDS,
    VERSION_SOURCES,
    ItemVersion,
    NodeVisit,
    Submission,
    SubmissionGroup,
    SubmissionItem,
    Transformation,
    TransformationInput,
    new_id,
    utcnow,
)

_T = {m.__name__: SQLModel.metadata.tables[str(m.__tablename__)]
      for m in (Submission, SubmissionGroup, SubmissionItem, ItemVersion, Transformation, TransformationInput)}
#: insert order: every row's references are inserted before it
_ORDER = ("Submission", "SubmissionGroup", "SubmissionItem", "Transformation", "ItemVersion", "TransformationInput")


class Cell(NamedTuple):
    """Where a value sits in a submission: group, entry (0 unless the group repeats), field."""

    group: str
    entry: int
    field: str


@dataclass
class NewValue:
    """One value to write, and (for a transformation) how it was made."""

    cell: Cell
    value: Any
    #: a transformation's kind (copy, map, formula, …, llm_extract); None: no transformation
    kind: str | None = None
    expression: str | None = None
    #: the input versions the value was taken from (the model's ``refId``s)
    inputs: list[str] = field(default_factory=list)
    meta: dict[str, Any] | None = None
    #: a copy (no transformation): the version it was copied from, its ``source_id``
    copied_from: str | None = None


@dataclass(frozen=True)
class CellValue:
    """The selected version of one item, as readers see it."""

    cell: Cell
    version_id: str
    value: Any
    source_type: str
    source_id: str | None
    created_by: str | None
    created_at: datetime


Rows = dict[str, list[dict[str, Any]]]


# --- writing -----------------------------------------------------------------------------------


def submission_rows(
    *,
    form_name: str,
    form_hash: str,
    values: Sequence[NewValue],
    source_type: str,
    origin: str = "manual",
    name: str | None = None,
    created_by: str | None = None,
    run_id: str | None = None,
    visit_id: str | None = None,
    step_key: str | None = None,
    llm_call_id: str | None = None,
    entries: Iterable[tuple[str, int]] = (),
    submission_id: str | None = None,
) -> tuple[str, Rows]:
    """The rows of a new submission holding ``values`` (one selected version each), unwritten.

    ``entries`` adds group entries that hold no value (an empty entry of a repeating group)."""
    check(origin, SUBMISSION_ORIGINS, "submission origin")
    check(source_type, VERSION_SOURCES, "version source")
    now = utcnow()
    sid = submission_id or new_id()
    rows: Rows = {name_: [] for name_ in _ORDER}
    rows["Submission"].append(dict(id=sid, form_name=form_name, form_hash=form_hash, name=name, origin=origin,
                                   run_id=run_id, visit_id=visit_id, step_key=step_key, created_by=created_by,
                                   created_at=now, updated_at=now))
    groups: dict[tuple[str, int], str] = {}
    for group, entry in [*entries, *((v.cell.group, v.cell.entry) for v in values)]:
        if (group, entry) not in groups:
            groups[(group, entry)] = gid = new_id()
            rows["SubmissionGroup"].append(dict(id=gid, submission_id=sid, group_name=group, entry=entry))
    for v in values:
        iid = new_id()
        rows["SubmissionItem"].append(dict(id=iid, submission_id=sid, group_id=groups[(v.cell.group, v.cell.entry)],
                                           field_name=v.cell.field))
        _version_rows(rows, v, item_id=iid, submission_id=sid, source_type=source_type, created_by=created_by,
                      run_id=run_id, visit_id=visit_id, llm_call_id=llm_call_id, now=now)
    return sid, rows


def _version_rows(rows: Rows, v: NewValue, *, item_id: str, submission_id: str, source_type: str,
                  created_by: str | None, run_id: str | None, visit_id: str | None, llm_call_id: str | None,
                  now: datetime) -> str:
    source_id = v.copied_from
    if v.kind is not None:
        check(v.kind, TRANSFORMATION_KINDS, "transformation kind")
        if run_id is None:
            raise ValueError("a transformation belongs to a run")
        source_id = new_id()
        rows["Transformation"].append(dict(id=source_id, run_id=run_id, visit_id=visit_id, llm_call_id=llm_call_id,
                                           kind=v.kind, expression=v.expression, meta=v.meta, created_at=now))
        for ref in dict.fromkeys(v.inputs):
            rows["TransformationInput"].append(dict(transformation_id=source_id, version_id=ref))
    vid = new_id()
    rows["ItemVersion"].append(dict(id=vid, item_id=item_id, submission_id=submission_id, value=v.value,
                                    source_type=source_type, source_id=source_id, selected=True,
                                    created_by=created_by, created_at=now))
    return vid


def insert_rows(conn: sa.Connection, rows: Rows) -> None:
    """Insert rows made by :func:`submission_rows` / :func:`version_rows` inside ``conn``'s transaction."""
    for name in _ORDER:
        if rows.get(name):
            conn.execute(sa.insert(_T[name]), rows[name])


def create_submission(**kw: Any) -> str:
    """Write a new submission (:func:`submission_rows`' arguments) in a transaction of its own."""
    sid, rows = submission_rows(**kw)
    with connection(write=True) as conn:
        insert_rows(conn, rows)
    return sid


def add_versions(submission_id: str, values: Sequence[NewValue], *, source_type: str,
                 created_by: str | None = None, run_id: str | None = None, visit_id: str | None = None,
                 llm_call_id: str | None = None) -> list[str]:
    """New selected versions of ``values``' items (the items and group entries are made where
    missing); the versions they replace stay, deselected. Returns the new version ids."""
    check(source_type, VERSION_SOURCES, "version source")
    now = utcnow()
    groups_t, items_t, versions_t = _T["SubmissionGroup"], _T["SubmissionItem"], _T["ItemVersion"]
    with connection(write=True) as conn:
        if conn.execute(sa.select(_T["Submission"].c.id).where(_T["Submission"].c.id == submission_id)).first() is None:
            raise NotFound(f"no submission {submission_id!r}")
        groups = {(r.group_name, r.entry): r.id for r in
                  conn.execute(sa.select(groups_t).where(groups_t.c.submission_id == submission_id))}
        items = {(r.group_id, r.field_name): r.id for r in
                 conn.execute(sa.select(items_t).where(items_t.c.submission_id == submission_id))}
        rows: Rows = {name: [] for name in _ORDER}
        replaced: list[str] = []
        out: list[str] = []
        for v in values:
            gid = groups.get((v.cell.group, v.cell.entry))
            if gid is None:
                groups[(v.cell.group, v.cell.entry)] = gid = new_id()
                rows["SubmissionGroup"].append(dict(id=gid, submission_id=submission_id, group_name=v.cell.group,
                                                    entry=v.cell.entry))
            iid = items.get((gid, v.cell.field))
            if iid is None:
                items[(gid, v.cell.field)] = iid = new_id()
                rows["SubmissionItem"].append(dict(id=iid, submission_id=submission_id, group_id=gid,
                                                   field_name=v.cell.field))
            else:
                replaced.append(iid)
            out.append(_version_rows(rows, v, item_id=iid, submission_id=submission_id, source_type=source_type,
                                     created_by=created_by, run_id=run_id, visit_id=visit_id,
                                     llm_call_id=llm_call_id, now=now))
        if replaced:
            conn.execute(sa.update(versions_t).where(versions_t.c.item_id.in_(replaced), versions_t.c.selected)
                         .values(selected=False))
        insert_rows(conn, rows)
        conn.execute(sa.update(_T["Submission"]).where(_T["Submission"].c.id == submission_id).values(updated_at=now))
    return out


# --- reading -----------------------------------------------------------------------------------


def get_submission(submission_id: str) -> Submission | None:
    with session() as s:
        return s.get(Submission, submission_id)


def require_submission(submission_id: str) -> Submission:
    row = get_submission(submission_id)
    if row is None:
        raise NotFound(f"no submission {submission_id!r}")
    return row


def list_submissions(*, form_name: str | None = None, run_id: str | None = None,
                     limit: int = 50, offset: int = 0) -> list[Submission]:
    """Submissions, newest first (of one form, or made by one run)."""
    with session() as s:
        q = select(Submission)
        if form_name is not None:
            q = q.where(Submission.form_name == form_name)
        if run_id is not None:
            q = q.where(Submission.run_id == run_id)
        q = q.order_by(col(Submission.created_at).desc(), col(Submission.id))
        return list(s.exec(page(q, limit, offset)).all())


def _cell_query(submission_id: str | None = None):
    g, i, v = _T["SubmissionGroup"], _T["SubmissionItem"], _T["ItemVersion"]
    q = (sa.select(g.c.group_name, g.c.entry, i.c.field_name, v)
         .select_from(v.join(i, v.c.item_id == i.c.id).join(g, i.c.group_id == g.c.id)))
    return q.where(v.c.submission_id == submission_id) if submission_id is not None else q


def _cell_value(r: Any) -> CellValue:
    return CellValue(Cell(r.group_name, r.entry, r.field_name), r.id, r.value, r.source_type, r.source_id,
                     r.created_by, r.created_at)


def selected_values(submission_id: str) -> list[CellValue]:
    """The selected version of every item, in group, entry, field order."""
    v = _T["ItemVersion"]
    with connection() as conn:
        rows = conn.execute(_cell_query(submission_id).where(v.c.selected)).all()
    return sorted((_cell_value(r) for r in rows), key=lambda c: c.cell)


def group_entries(submission_id: str) -> list[tuple[str, int]]:
    """Every group entry of the submission, values or not."""
    g = _T["SubmissionGroup"]
    with connection() as conn:
        return sorted((r.group_name, r.entry) for r in
                      conn.execute(sa.select(g.c.group_name, g.c.entry).where(g.c.submission_id == submission_id)))


def history(submission_id: str) -> dict[Cell, list[CellValue]]:
    """Every version of every item, oldest first per item."""
    with connection() as conn:
        rows = conn.execute(_cell_query(submission_id)).all()
    out: dict[Cell, list[CellValue]] = defaultdict(list)
    for r in sorted(rows, key=lambda r: (r.created_at, r.id)):
        cv = _cell_value(r)
        out[cv.cell].append(cv)
    return dict(sorted(out.items()))


@dataclass(frozen=True)
class VersionInfo:
    """One version with its submission and, when a step made it, its transformation."""

    value: CellValue
    submission_id: str
    form_name: str
    transformation: dict[str, Any] | None
    #: the versions it was made from: the input versions its transformation read, or the one
    #: a ``merged`` version was copied from
    inputs: tuple[str, ...] = ()


def versions(version_ids: Iterable[str]) -> dict[str, VersionInfo]:
    """The versions asked for, with what made them (missing ids are left out)."""
    ids = list(dict.fromkeys(version_ids))
    if not ids:
        return {}
    v, s, t, ti = _T["ItemVersion"], _T["Submission"], _T["Transformation"], _T["TransformationInput"]
    with connection() as conn:
        rows = conn.execute(_cell_query().add_columns(s.c.form_name).join(s, s.c.id == v.c.submission_id)
                            .where(v.c.id.in_(ids))).all()
        sources = [r.source_id for r in rows if r.source_id and r.source_type == "transformation"]
        trans = {r.id: dict(r._mapping) for r in conn.execute(sa.select(t).where(t.c.id.in_(sources)))} if sources else {}
        inputs: dict[str, list[str]] = defaultdict(list)
        if trans:
            for r in conn.execute(sa.select(ti).where(ti.c.transformation_id.in_(list(trans)))):
                inputs[r.transformation_id].append(r.version_id)
    return {r.id: VersionInfo(_cell_value(r), r.submission_id, r.form_name, trans.get(r.source_id or ""),
                              (r.source_id,) if r.source_type == "merged" and r.source_id
                              else tuple(sorted(inputs.get(r.source_id or "", ()))))
            for r in rows}


def merged_from(submission_id: str) -> list[str]:
    """The submissions a merged submission's versions were copied from, oldest first."""
    v, s = _T["ItemVersion"], _T["Submission"]
    original = v.alias("original")
    q = (sa.select(s.c.id, s.c.created_at).distinct()
         .select_from(v.join(original, original.c.id == v.c.source_id).join(s, s.c.id == original.c.submission_id))
         .where(v.c.submission_id == submission_id, v.c.source_type == "merged")
         .order_by(s.c.created_at, s.c.id))
    with connection() as conn:
        return [r.id for r in conn.execute(q)]


def output_submissions(run_id: str) -> dict[str, str]:
    """Visit id → output submission id, for a run's template steps."""
    with session() as s:
        q = select(NodeVisit.id, NodeVisit.output_submission_id).where(
            NodeVisit.run_id == run_id, col(NodeVisit.output_submission_id).is_not(None))
        return {vid: sid for vid, sid in s.exec(q).all() if sid}


def step_output(run_id: str, node_id: str) -> str | None:
    """The output submission of the latest completed visit of a template step (None: none yet)."""
    with session() as s:
        q = (select(NodeVisit.output_submission_id)
             .where(NodeVisit.run_id == run_id, NodeVisit.node_id == node_id, NodeVisit.status == "completed",
                    col(NodeVisit.output_submission_id).is_not(None))
             .order_by(col(NodeVisit.sequence).desc()).limit(1))
        return s.exec(q).first()


def transformations_of(submission_id: str) -> list[Transformation]:
    """The transformations behind a submission's versions."""
    with session() as s:
        q = select(Transformation).where(col(Transformation.id).in_(
            select(ItemVersion.source_id).where(ItemVersion.submission_id == submission_id)))
        return list(s.exec(q).all())
