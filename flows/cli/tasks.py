"""`ergon tasks list|show|claim|answer|code`: the task inbox on the command line.

The CLI acts as the identity :mod:`flows.identity` resolves (a personal token, ``--as USER``
with that user's password, ``ERGON_USER`` where an admin bound this OS user to it, else the OS
user itself; a refused identity exits 1 with the credential to give, the task unchanged), and
applies exactly the rules of the dashboard (:mod:`flows.humans`): it lists and shows only the
tasks that user may see, and a refused claim or answer prints the reason and exits 1 with the
task unchanged.
An answer goes through the run owner (:func:`flows.runs.answers.answer`): a task whose run
cannot take the answer is refused (and closed when the run is over); a run whose process
stopped while it waited resumes from its checkpoint with the answer.
Exit 2 is for a usage mistake (unknown task, a ``--set`` without ``=``).
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from cyclopts import App, Parameter
from rich.console import Console
from rich.markup import escape

from flows.cli import bounds
from flows.cli.acting import Who, resolved
from flows.cli.output import error

tasks_app = App(name="tasks", help="Human tasks: the inbox of the user you act as (see --as, --token).")

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)

Json = Annotated[bool, Parameter(name="--json", help="Print JSON.")]


def _assignee(task: Any) -> str:
    return task.assignee or "anyone"


@tasks_app.command(name="list")
def tasks_list(
    *,
    status: str = "open",
    run: Annotated[str | None, Parameter(name="--run")] = None,
    limit: Annotated[int, Parameter(validator=bounds.LIMIT)] = 50,
    wide: Annotated[bool, Parameter(name="--wide", negative="")] = False,
    who: Who = Who(),
    json_: Json = False,
) -> int:
    """List the tasks you may see, newest first.

    Parameters
    ----------
    status
        open (pending + in progress), pending, in_progress, completed, cancelled, expired or all.
    run
        Only the tasks of this run.
    limit
        At most this many rows (1 to 100000).
    wide
        Show every column, however wide (a narrow terminal leaves some out; task ids are never cut).
    """
    from flows.cli.output import table
    from flows.humans import task_dict
    from flows.store import tasks as task_store

    me = resolved(who)
    if isinstance(me, int):
        return me
    user = me.name
    if status not in task_store.TASK_FILTERS:
        return error(f"--status must be one of: {', '.join(task_store.TASK_FILTERS)}")
    rows, total = task_store.list_tasks(status, visible_to=user, run_id=run, limit=limit)
    if json_:
        print(json.dumps({"user": user, "total": total, "tasks": [task_dict(t) for t in rows]}))
        return 0
    # The id is what the next command needs: never cut (a narrow terminal leaves columns out, wraps the title).
    table(["task", "title", "assignee", "status", "taken by", "created"],
          [[t.id, t.title, _assignee(t), t.status, t.claimed_by or "",
            t.created_at.strftime("%Y-%m-%d %H:%M") if t.created_at else ""] for t in rows],
          ids=("task",), drop=("created", "taken by", "assignee"), wide=wide)
    out.print(f"[dim]{len(rows)} of {total} {status} task(s) for {escape(user)}[/]")
    return 0


@tasks_app.command(name="show")
def tasks_show(task_id: str, *, who: Who = Who(), json_: Json = False) -> int:
    """Show a task: its rendered title and description, its fields, the run's context.

    Parameters
    ----------
    task_id
        The task.
    """
    from flows import humans
    from flows.store import runs as run_store
    from flows.store import tasks as task_store

    me = resolved(who)
    if isinstance(me, int):
        return me
    user = me.name
    task = task_store.get_task(task_id)
    if task is None:
        return error(f"no task {task_id}")
    if not humans.can_see(task, user):
        err.print(f"[red]refused:[/] {escape(user)} may not see task {task_id} (assigned to {escape(_assignee(task))})")
        return 1
    state = None
    if task.status in ("pending", "in_progress"):  # can its run take an answer? (closes it when not)
        from flows.runs.answers import task_run_state

        state = task_run_state(task)
        task = task_store.get_task(task_id) or task
    run_rec = run_store.get_run(task.run_id)
    started_by = run_rec.started_by if run_rec else None
    may_answer, reason = humans.can_answer(task, user, started_by)
    context = run_rec.context if run_rec else None
    if json_:
        run_info = None if run_rec is None else {
            "run_id": run_rec.id, "definition": run_rec.definition_name, "status": run_rec.status,
            "started_by": started_by}
        print(json.dumps({"task": humans.task_dict(task), "run": run_info, "context": context,
                          "run_state": None if state is None else {"state": state.state, "reason": state.reason},
                          "events": [e.model_dump(mode="json") for e in task_store.task_events(task_id)],
                          "may_answer": may_answer, "reason": reason or None}, default=str))
        return 0
    out.print(f"[bold]{escape(task.title)}[/]")
    out.print(f"[dim]task {task.id} · node {escape(task.node_id)} · run {task.run_id}"
              + (escape(f" ({run_rec.definition_name}, {run_rec.status}, started by {started_by})") if run_rec else "")
              + "[/]")
    line = f"status [bold]{task.status}[/] · assigned to {escape(_assignee(task))}"
    if task.claimed_by:
        line += f" · taken by {escape(task.claimed_by)}"
    if task.four_eyes:
        line += " · four-eyes"
    out.print(line)
    if state is not None:
        colour = {"waiting": "green", "resumable": "yellow", "over": "red"}[state.state]
        out.print(f"[{colour}]{escape(state.reason)}[/]")
    if task.description:
        out.print()
        out.print(task.description, markup=False)
    out.print()
    out.print("[bold]fields[/]")
    for f in humans.normalize_fields(task.fields):
        extra = [f["type"]] + (["required"] if f["required"] else [])
        if f["options"]:
            extra.append("one of: " + ", ".join(str(o) for o in f["options"]))
        if f["default"] is not None:
            extra.append(f"default {f['default']!r}")
        label = f" — {f['label']}" if f["label"] else ""
        out.print(f"  {escape(f['name'] + label)} [dim]({escape('; '.join(extra))})[/]")
    if task.status == "completed":
        out.print()
        out.print(f"answered by [bold]{escape(task.answered_by or '')}[/] via {task.answered_via} at "
                  f"{task.answered_at.isoformat(timespec='seconds') if task.answered_at else '?'}")
        out.print(json.dumps(task.answer, indent=2, default=str), markup=False)
    elif not may_answer:
        out.print(f"\n[yellow]{escape(user)} may not answer: {escape(reason)}[/]")
    out.print()
    out.print("[bold]run context[/]")
    out.print(json.dumps(context, indent=2, default=str), markup=False)
    return 0


@tasks_app.command(name="claim")
def tasks_claim(task_id: str, *, who: Who = Who(), json_: Json = False) -> int:
    """Take a task, so that others see you are working on it.

    Parameters
    ----------
    task_id
        The task.
    """
    from flows import humans

    me = resolved(who)
    if isinstance(me, int):
        return me
    user = me.name
    try:
        task = humans.claim(task_id, user)
    except humans.TaskNotFound as exc:
        return error(exc)
    except humans.TaskRefused as exc:
        return _refused(exc, json_)
    if json_:
        print(json.dumps({"task": humans.task_dict(task)}))
    else:
        out.print(f"task {task.id} taken by [bold]{escape(task.claimed_by or '')}[/]")
    return 0


@tasks_app.command(name="code")
def tasks_code(task_id: str, *, who: Who = Who(), json_: Json = False) -> int:
    """A one-time code to answer a task in Prefect's own form (an assigned or four-eyes task).

    Prefect keeps what its form sends, so the form asks this code, never your personal token: it
    answers that task once, as you, within 15 minutes. You must be allowed to answer the task.

    Parameters
    ----------
    task_id
        The task.
    """
    from flows import humans

    me = resolved(who)
    if isinstance(me, int):
        return me
    try:
        issued = humans.answer_code(task_id, me.name)
    except humans.TaskNotFound as exc:
        return error(exc, code=2)
    except humans.TaskRefused as exc:
        return _refused(exc, json_)
    expires = issued.row.expires_at.isoformat(timespec="seconds")
    if json_:
        print(json.dumps({"task_id": task_id, "user": me.name, "code": issued.code, "expires_at": expires}))
    else:
        out.print(issued.code, markup=False)
        err.print(f"for task {task_id}, as {escape(me.name)}: type it into the form's answer code field; it answers "
                  f"once, until {expires}")
    return 0


def _parse_sets(pairs: list[str]) -> tuple[dict[str, str], list[str]]:
    """``FIELD=VALUE`` pairs as a dict of raw strings; each value is converted to its field's
    type by :func:`flows.humans.validate_answer` (so `--set ok=yes` and `--set amount=12.5` work
    and a text field keeps exactly what was typed)."""
    answer: dict[str, str] = {}
    problems = []
    for pair in pairs:
        name, sep, value = pair.partition("=")
        name = name.strip()
        if not sep or not name:
            problems.append(f"--set {pair!r}: expected FIELD=VALUE")
        elif name in answer:
            problems.append(f"--set {name}: given twice")
        else:
            answer[name] = value
    return answer, problems


def _refused(exc: Any, json_: bool) -> int:
    if json_:
        print(json.dumps({"refused": True, "task_id": exc.task_id, "reason": exc.reason, "errors": exc.errors}))
    err.print(f"[red]refused:[/] {escape(exc.reason)}" if not exc.errors else "[red]refused:[/] invalid answer")
    for e in exc.errors:
        err.print(f"  {e}", markup=False)
    return 1


@tasks_app.command(name="answer")
def tasks_answer(
    task_id: str,
    *,
    set_: Annotated[list[str] | None, Parameter(name="--set", negative=())] = None,
    who: Who = Who(),
    json_: Json = False,
) -> int:
    """Answer a task; the answer is checked against its fields before the run resumes.

    Parameters
    ----------
    task_id
        The task.
    set_
        FIELD=VALUE (repeatable); booleans take true/false/yes/no, numbers are parsed.
    """
    from flows import humans
    from flows.runs import answers

    me = resolved(who)
    if isinstance(me, int):
        return me
    user = me.name
    raw, problems = _parse_sets(set_ or [])
    if problems:
        for p in problems:
            error(p)
        return 2
    try:
        result = answers.answer(task_id, user, raw, via="cli")
    except humans.TaskNotFound as exc:
        return error(exc)
    except humans.TaskRefused as exc:
        return _refused(exc, json_)
    task = result.task
    if json_:
        print(json.dumps({"task_id": task.id, "run_id": task.run_id, "status": task.status, "answer": task.answer,
                          "answered_by": task.answered_by,
                          "answered_at": task.answered_at.isoformat() if task.answered_at else None,
                          "delivered": result.delivered, "message": result.message,
                          "hook_errors": result.errors}, default=str))
    else:
        out.print(f"task {task.id} answered by [bold]{escape(task.answered_by or '')}[/]: "
                  + escape(", ".join(f"{k}={json.dumps(v, default=str)}" for k, v in task.answer.items())))
        if result.delivered == "checkpoint":
            out.print(f"[yellow]{escape(result.message)}[/]")
    if result.errors:
        # The answer is recorded and final, but the run did not get it: say so, and fail.
        for e in result.errors:
            err.print(f"[red]the answer is recorded, but the run was not resumed:[/] {escape(e)}")
        return 1
    return 0
