"""`ergon submissions create|list|show|set|export`: form instances on the command line.

A submission (seed 000) is an instance of a form of the definitions folder whose every value
keeps its versions: ``set`` adds a new selected version and keeps the old ones, ``show
--history`` lists them. ``create`` reads a YAML/JSON file with the definitions' bounded loader
(:func:`flows.cli.inputs.read_input_file`) and checks it against the form: every problem is
printed with its path (``points[1].topic``) and nothing is written.

``create`` and ``set`` act for the identity :mod:`flows.identity` resolves (``--as``, ``--token``,
``ERGON_TOKEN``, else the OS user) and record its name as the values' author. Then the change
is announced from this process (:func:`flows.submissions.records.announce_change`): the
``on_submission_created`` / ``on_submission_updated`` triggers of the submission's form start
their runs, which are printed, and a Prefect event is sent. Reading (``list``, ``show``, ``export``) needs no identity, as ``ergon runs list``.

A mistake (an unknown form or submission, a bad path or value) is one ``error:`` line per
problem and exit 2; nothing is written.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Annotated, Any

from cyclopts import App, Parameter
from rich.markup import escape

from flows.cli import bounds
from flows.cli.acting import Who, resolved
from flows.cli.output import diagnostics, err, error, out

submissions_app = App(name="submissions", help="Submissions: instances of forms, every value with its versions.")

Json = Annotated[bool, Parameter(name="--json", help="Print JSON.")]


def _invalid(problems: list[str]) -> int:
    for problem in problems:
        error(problem)
    return 2


def _jsonable(value: Any) -> Any:
    """File data as JSON data: a YAML date or time becomes its ISO text (what a `date` field holds)."""
    def iso(v: Any) -> Any:
        if isinstance(v, (dt.date, dt.datetime, dt.time)):
            return v.isoformat()
        raise TypeError(f"a {type(v).__name__} is not a form value")

    return json.loads(json.dumps(value, default=iso))


def _badge(v: Any) -> str:
    """``import · lea · 2026-12-01 17:58:06`` (and the transformation's id, when a step made it,
    or the version it was copied from, in a merged submission)."""
    parts = [v.source_type + (f" {v.source_id}" if v.source_id else ""), v.created_by or "?",
             v.created_at.strftime("%Y-%m-%d %H:%M:%S")]
    return " · ".join(parts)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _running(started: list[str]) -> None:
    for run_id in started:
        err.print(f"started run [bold]{run_id}[/] (ergon runs show {run_id})")


@submissions_app.command(name="create")
def submissions_create(
    form: str,
    *,
    file: Annotated[str, Parameter(name="--file")],
    name: Annotated[str | None, Parameter(name="--name")] = None,
    who: Who = Who(),
    json_: Json = False,
) -> int:
    """Create a submission of FORM from a YAML/JSON file; prints its id.

    Parameters
    ----------
    form
        A form of the definitions folder.
    file
        YAML/JSON file with the form data: ``{group: {field: value}}``, a repeating group a list of entries.
    name
        A name for the submission.
    """
    from flows.cli.inputs import read_input_file
    from flows.submissions import records

    me = resolved(who)
    if isinstance(me, int):
        return me
    try:
        form_def, digest = records.form_named(form)
    except records.FormNotFound as exc:
        return error(exc)
    data, problems = read_input_file(file)
    if problems:
        return diagnostics(problems)
    try:
        data = _jsonable(data)
        sid = records.create(form_def, digest, data, created_by=me.name, name=name, tell=False)
    except records.SubmissionInvalid as exc:
        return _invalid(exc.problems)
    except TypeError as exc:
        return error(f"{file}: {exc}")
    started = records.announce_change("created", sid, me.name)
    if json_:
        print(json.dumps({"id": sid, "form": form, "started_runs": started}))
    else:
        print(sid)
        _running(started)
    return 0


@submissions_app.command(name="list")
def submissions_list(
    *,
    form: Annotated[str | None, Parameter(name="--form")] = None,
    limit: Annotated[int, Parameter(validator=bounds.LIMIT)] = 50,
    json_: Json = False,
) -> int:
    """List submissions, newest first.

    Parameters
    ----------
    form
        Only the submissions of this form.
    limit
        At most this many rows (1 to 100000).
    """
    from rich.table import Column, Table

    from flows.store import db
    from flows.store import submissions as submission_store

    db.init_db()
    rows = submission_store.list_submissions(form_name=form, limit=limit)
    if form is not None and not rows:
        from flows.submissions import records

        try:
            records.form_named(form)
        except records.FormNotFound as exc:  # a typo, not an empty list
            return error(exc)
    data = [{"id": r.id, "form": r.form_name, "name": r.name, "origin": r.origin, "run_id": r.run_id,
             "step_key": r.step_key, "created_by": r.created_by, "created_at": r.created_at.isoformat(),
             "updated_at": r.updated_at.isoformat()} for r in rows]
    if json_:
        print(json.dumps({"submissions": data}))
        return 0
    table = Table(Column("submission", no_wrap=True), Column("form", no_wrap=True), "name", Column("origin", no_wrap=True),
                  "by", Column("updated", no_wrap=True))
    for r in rows:
        origin = r.origin + (f" (run {' '.join(filter(None, (r.run_id, r.step_key)))})" if r.run_id else "")
        table.add_row(r.id, r.form_name, r.name or "", origin, r.created_by or "", f"{r.updated_at:%Y-%m-%d %H:%M:%S}")
    out.print(table)
    out.print(f"[dim]{len(data)} submission(s)[/]")
    return 0


@submissions_app.command(name="show")
def submissions_show(
    submission_id: str,
    *,
    history: Annotated[bool, Parameter(name="--history", negative=())] = False,
    json_: Json = False,
) -> int:
    """Show a submission: each item's selected value with where it came from (source, who, when).

    Parameters
    ----------
    submission_id
        The submission.
    history
        List every version of each item, oldest first; the selected one is marked ``*``.
    """
    from flows.store import db
    from flows.store import submissions as submission_store
    from flows.store.errors import NotFound
    from flows.submissions import records
    from flows.submissions.shape import cell_path

    db.init_db()
    try:
        doc = records.export(submission_id)
        view = records.view(submission_id)
    except NotFound as exc:
        return error(exc)
    selected = {v.version_id for v in view.values}
    versions = submission_store.history(submission_id) if history else {}
    if json_:
        if history:
            doc["history"] = {cell_path(cell, view.form): [
                {"version_id": v.version_id, "value": v.value, "selected": v.version_id in selected,
                 "source_type": v.source_type, "source_id": v.source_id, "created_by": v.created_by,
                 "created_at": v.created_at.isoformat()} for v in found] for cell, found in versions.items()}
        print(json.dumps(doc))
        return 0
    sub = view.submission
    out.print(f"[bold]submission {sub.id}[/] · form {escape(sub.form_name)}"
              + (f" · {escape(sub.name)}" if sub.name else "") + f" · {sub.origin}")
    out.print(f"[dim]created by {escape(sub.created_by or '?')} at {sub.created_at:%Y-%m-%d %H:%M:%S}"
              + (f" · run {sub.run_id} step {escape(sub.step_key or '')}" if sub.run_id else "")
              + (f" · merged from {', '.join(doc['merged_from'])}" if doc["merged_from"] else "") + "[/]")
    if not view.values:
        out.print("[dim](no values)[/]")
    for v in view.values:
        path = cell_path(v.cell, view.form)
        if not history:
            out.print(f"{escape(path)} = {escape(_text(v.value))}  [dim]\\[{escape(_badge(v))}][/]")
            continue
        out.print(f"[bold]{escape(path)}[/]")
        for version in versions.get(v.cell, []):
            mark = "*" if version.version_id in selected else " "
            out.print(f"  {mark} {escape(_text(version.value))}  [dim]\\[{escape(_badge(version))}] {version.version_id}[/]")
    return 0


@submissions_app.command(name="set")
def submissions_set(
    submission_id: str,
    assignments: list[str],
    *,
    who: Who = Who(),
    json_: Json = False,
) -> int:
    """Set values: one call is one update (one new selected version per value; the old ones kept).

    The submission as it would be after the change must still fit its form, otherwise nothing is
    written.

    Parameters
    ----------
    submission_id
        The submission.
    assignments
        ``group.field=VALUE``, or ``group[N].field=VALUE`` in a repeating group (a new entry is
        the next index). Numbers, integers and booleans are read as JSON, other fields as text.
    """
    from flows.store.errors import NotFound
    from flows.submissions import records, shape

    me = resolved(who)
    if isinstance(me, int):
        return me
    try:
        view = records.view(submission_id)
    except NotFound as exc:
        return error(exc)
    changes = []
    problems: list[str] = []
    seen: set[Any] = set()
    for text in assignments:
        try:
            cell, value = shape.parse_assignment(view.form, text)
        except records.SubmissionInvalid as exc:
            problems += exc.problems
            continue
        if cell in seen:
            problems.append(f"{shape.cell_path(cell, view.form)}: set twice in one call; give it one value")
        seen.add(cell)
        changes.append((cell, value))
    if problems:
        return _invalid(problems)
    try:
        version_ids = records.set_values(submission_id, changes, by=me.name, tell=False)
    except records.SubmissionInvalid as exc:
        return _invalid(exc.problems)
    started = records.announce_change("updated", submission_id, me.name)
    if json_:
        print(json.dumps({"id": submission_id, "version_ids": version_ids, "started_runs": started}))
    else:
        out.print(f"submission {submission_id}: {len(version_ids)} value(s) set by {escape(me.name)}")
        _running(started)
    return 0


@submissions_app.command(name="export")
def submissions_export(
    submission_id: str,
    *,
    out_file: Annotated[str | None, Parameter(name="--out")] = None,
) -> int:
    """Export a submission as JSON: its form, its data, and each value's version and source.

    Parameters
    ----------
    submission_id
        The submission.
    out_file
        Write the JSON to this file instead of standard output.
    """
    from pathlib import Path

    from flows.store import db
    from flows.store.errors import NotFound
    from flows.submissions import records

    db.init_db()
    try:
        text = json.dumps(records.export(submission_id), indent=2)
    except NotFound as exc:
        return error(exc)
    if out_file is None:
        print(text)
        return 0
    try:
        Path(out_file).write_text(text + "\n", encoding="utf-8")
    except OSError as exc:
        return error(f"cannot write {out_file}: {exc.strerror or exc}")
    out.print(f"wrote submission {submission_id} to {escape(out_file)}")
    return 0
