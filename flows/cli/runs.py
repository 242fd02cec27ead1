"""Commands that run things: `run`, `runs list|show|resume|cancel|export`."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated, Any, cast

from cyclopts import App, Parameter
from rich.console import Console
from rich.markup import escape

from flows.cli import bounds
from flows.cli.acting import Who, resolved
from flows.cli.output import diagnostics, err, error, out
from flows.heap import heavy_imports

if TYPE_CHECKING:  # the store is imported by the commands that use it (a fast `ergon --help`)
    from flows.store.models import RunStatus

runs_app = App(name="runs", help="Inspect and control runs.")

EXIT = {"completed": 0, "paused": 0, "failed": 1, "crashed": 1, "cancelled": 1}


def _prepare_runtime() -> None:
    """Prefect API + store schema + crash detection: what every command touching runs needs."""
    from flows import runs

    for run in runs.prepare():
        err.print(f"[yellow]run {run.id} ({run.definition_name}) was left running by a dead process: marked crashed[/]")


def _progress_listener(console: Console):
    icons = {"started": "[cyan]▶[/]", "completed": "[green]✓[/]", "failed": "[red]✗[/]", "skipped": "[dim]↷[/]",
             "cancelled": "[yellow]■[/]", "paused": "[yellow]⏸[/]"}
    from flows.cli.progress import FanoutBars

    bars = FanoutBars(console)

    def listen(event: str, node: str, detail: dict[str, Any]) -> None:
        if event == "progress":
            bars.update(node, detail)
            return
        if event != "started":
            bars.end(node)
        if event == "paused":
            task = detail["task_id"]
            console.print(f"  {icons['paused']} {node} waits for a person: [bold]{detail.get('title', '')}[/]\n"
                          f"      task {task} — answer with: ergon tasks answer {task} --set FIELD=VALUE …\n"
                          f"      (or from the dashboard, or Prefect's own resume form); this command waits")
            return
        if event == "refused":
            console.print(f"  {icons['paused']} {node}: an answer through Prefect was refused "
                          f"({escape(str(detail.get('reason', '')))}); it waits again")
            return
        if event == "answered" and detail.get("kept"):
            console.print(f"  {icons['completed']} {node}: task {detail['task_id']} was answered while the run was "
                          "stopped; that answer is used")
            return
        if event == "started" and not detail.get("items") and detail.get("attempt", 1) == 1:
            return  # one line per node: its end, unless it is a retry or a fan-out
        extra = ""
        if event == "started" and detail.get("items") is not None:
            extra = f" ({detail['items']} items)"
        elif event == "started":
            extra = f" (attempt {detail['attempt']})"
        if detail.get("ms") is not None:
            extra += f" [dim]{detail['ms']} ms[/]"
        if detail.get("next"):
            extra += f" → {detail['next']}"
        if detail.get("error"):
            extra += f" [red]{detail['error']}[/]"
        console.print(f"  {icons.get(event, '·')} {node}{extra}")

    return listen


def run(
    name: str,
    *,
    input: Annotated[list[str] | None, Parameter(name=["--input", "-i"])] = None,
    input_file: Annotated[str | None, Parameter(name="--input-file")] = None,
    json_: Annotated[bool, Parameter(name="--json")] = False,
    record: Annotated[str | None, Parameter(name="--record")] = None,
    replay: Annotated[str | None, Parameter(name="--replay")] = None,
    run_id: Annotated[str | None, Parameter(name="--run-id", show=False)] = None,
    version: Annotated[int | None, Parameter(name="--version", validator=bounds.VERSION)] = None,
    supervised: Annotated[bool, Parameter(name="--supervised", negative=())] = False,
    message: Annotated[str | None, Parameter(name="--message")] = None,
    submission: Annotated[list[str] | None, Parameter(name="--submission", negative=())] = None,
    who: Who = Who(),
) -> int:
    """Validate a definition, run it on Prefect, show progress node by node, wait for the end.

    The run is recorded as started by the user you act as (--as, --token; see `ergon tokens`).

    Parameters
    ----------
    name
        Definition name, or a path to a definition file.
    input
        KEY=VALUE (repeatable); values are JSON when they parse as JSON.
    input_file
        YAML/JSON file with the inputs.
    json_
        Print one JSON object {run_id, status, outcome, context, error, error_kind} as the last line.
    record
        Store every model response in this cassette file.
    replay
        Answer every model call from this cassette file (a miss fails loudly).
    run_id
        Execute this pending run (recorded by :func:`flows.runs.start_detached`) instead of recording a new one;
        it keeps the starter recorded with it (no --as or token is read).
    version
        Run this published version (see `ergon versions NAME`) instead of the draft file.
    supervised
        Give the run a supervisor: an LLM that hears every step and may steer it (processes only).
    message
        A message for the supervisor's first turn (with --supervised).
    submission
        A template's input: this submission of its input form (see `ergon submissions`). Each
        step writes a submission of its output form, every value citing the values it came from.
        Repeatable: several submissions are merged into a new one first (repeating groups'
        entries one after the other; a field of another group held by two is refused).
    """
    with heavy_imports():  # the compiler, the store (see flows.heap)
        from flows import runs
        from flows.catalog import DefinitionNotFound
        from flows.cli.inputs import parse_pairs, read_input_file
        from flows.runs.sources import catalog_for_start
        from flows.store import runs as run_store

    console = err if json_ else out
    try:
        catalog = catalog_for_start(name, run_id)  # a pending run's own definitions, else NAME's
    except DefinitionNotFound as exc:
        return error(exc.args[0])
    try:
        compiled = runs.compile_definition(name, catalog=catalog, version=version)
    except runs.StartRefused as exc:
        return diagnostics(exc.problems)
    inputs, problems = read_input_file(input_file) if input_file else ({}, [])
    pairs, more = parse_pairs(input or [])
    inputs.update(pairs)
    problems += more
    if problems:
        return diagnostics(problems)
    version = getattr(compiled, "version", None) or None
    recorded = run_id is not None  # a detached start's child: the run was recorded by its parent
    if run_id is None:
        from flows.store import db

        db.init_db()
        me = resolved(who)
        if isinstance(me, int):
            return me
        try:
            created = runs.create(compiled, inputs, catalog=catalog, version=version, started_by=me.name,
                                  source=input_file or "--input", supervised=supervised, message=message,
                                  submission_id=submission)
        except runs.StartRefused as exc:
            return diagnostics(exc.problems)
        run_id, inputs = created.id, dict(created.inputs or {})  # a submission's values are its inputs
    _prepare_runtime()
    pending = run_store.get_run(run_id)
    if pending is None or pending.status != "pending":
        return error(f"run {run_id} is not a pending run")
    if recorded and (pending.definition_name != compiled.plan.name or inputs != dict(pending.inputs or {})
                     or (version is not None and version != pending.definition_version)):
        # executed exactly as recorded (definition, version, inputs — and its starter): the
        # internal path is no way to run something else in somebody else's name
        return error(f"run {run_id} was recorded for {pending.definition_name} with other inputs or version: "
                     "--run-id executes a pending run only as it was recorded")
    console.print(f"[bold]{compiled.plan.name}[/] [dim]version {compiled.plan.version}[/]")
    result = runs.start(compiled, inputs, catalog=catalog, run_id=run_id, listener=_progress_listener(console),
                        record=record, replay=replay, version=version)
    _print_result(result.to_dict(), json_, console)
    return EXIT.get(result.status, 1)


def _print_result(result: dict[str, Any], json_: bool, console: Console) -> None:
    colour = {"completed": "green", "paused": "yellow"}.get(result["status"], "red")
    line = f"run [bold]{result['run_id']}[/] [{colour}]{result['status']}[/]"
    if result.get("outcome") and result["status"] == "completed":
        line += f" → outcome [bold]{result['outcome']}[/]"
    console.print(line)
    if result.get("error"):
        console.print(f"  [red]{result['error']}[/]")
    if json_:
        print(json.dumps(result, default=str))


# ------------------------------------------------------------------------------ runs
def _run_row(r: Any) -> dict[str, Any]:
    dur = (r.ended_at - r.started_at).total_seconds() if r.ended_at and r.started_at else None
    return {"run_id": r.id, "definition": r.definition_name, "version": r.definition_version, "status": r.status,
            "outcome": r.outcome, "trigger": r.trigger, "started_by": r.started_by,
            "created_at": r.created_at.isoformat() if r.created_at else None, "duration_s": dur, "error": r.error}


def _starter(r: Any) -> str:
    """Who or what started the run, for the ``by`` column: the user, else the deployment whose
    worker ran it (a `prefect deployment run`, a schedule of Prefect's), else the parent run."""
    if r.started_by:
        return r.started_by
    if r.deployment:
        return f"deployment {r.deployment}"
    if r.parent_run_id:
        return f"run {r.parent_run_id}"
    return ""


def _started(r: Any) -> str:
    """How the run started, in words: who (when a user did) and through what."""
    via = {"manual": "", "api": "Prefect's API", "subprocess": f"as a sub-process of run {r.parent_run_id}",
           "schedule": "a schedule", "webhook": "a webhook", "email": "an email", "replay": "a replay",
           "on_complete": "another run's completion"}.get(r.trigger, r.trigger)
    if r.trigger == "subprocess" and not r.parent_run_id:
        via = "as a sub-process"
    if r.deployment and r.trigger != "subprocess":
        via = f"{via or r.trigger} via deployment {r.deployment}" + (f" (work pool {r.work_pool})" if r.work_pool else "")
    if r.started_by:
        return f"by {r.started_by}" + (f", {via}" if via else "")
    return f"through {via}" if via else "by an unknown user"


def _usage(run_rec: Any) -> dict[str, Any]:
    """The run's model use: its calls, their tokens in and out, the tokens and cost the run totals."""
    from flows.store import visits as visit_store

    calls = visit_store.llm_calls_for_run(run_rec.id)
    return {"llm_calls": len(calls), "tokens_in": sum(c.tokens_in for c in calls),
            "tokens_out": sum(c.tokens_out for c in calls), "tokens": run_rec.tokens, "cost_usd": run_rec.cost_usd}


def _where_it_ran(r: Any) -> dict[str, Any]:
    """Where a run ran: its Prefect flow run, the deployment and work pool whose worker ran it
    (when one did), and the host and process that executed it last."""
    return {"prefect_flow_run_id": r.prefect_flow_run_id, "deployment": r.deployment, "work_pool": r.work_pool,
            "host": r.host, "pid": r.ran_pid}


def _find_run(run_id: str) -> Any:
    """The run, or None after saying so (commands then exit 2)."""
    from flows.store import db
    from flows.store import runs as run_store

    db.init_db()
    run_rec = run_store.get_run(run_id)
    if run_rec is None:
        error(f"no run {run_id}")
    return run_rec


def _run_and_actor(run_id: str, who: Who) -> tuple[Any, Any] | int:
    """The run and the identity ``who`` proves, or the exit code after saying why not (2: no
    such run; the identity's refusal code otherwise)."""
    run_rec = _find_run(run_id)
    if run_rec is None:
        return 2
    me = resolved(who)
    return me if isinstance(me, int) else (run_rec, me)


@runs_app.command(name="list")
def runs_list(
    *,
    status: str | None = None,
    definition: str | None = None,
    limit: Annotated[int, Parameter(validator=bounds.LIMIT)] = 50,
    wide: Annotated[bool, Parameter(name="--wide", negative="")] = False,
    json_: Annotated[bool, Parameter(name="--json")] = False,
) -> int:
    """List runs, newest first.

    Parameters
    ----------
    status
        Only runs in this status.
    definition
        Only runs of this definition.
    limit
        At most this many rows (1 to 100000).
    wide
        Show every column, however wide (a narrow terminal leaves some out; run ids are never cut).
    json_
        Print JSON.
    """
    from flows.cli.output import table
    from flows.store import db
    from flows.store import runs as run_store

    db.init_db()
    from flows import runs

    runs.detect_crashed()  # a dead process's run is shown crashed, not running or pending
    # not checked against RUN_STATUSES: an unknown status lists no runs
    rows, total = run_store.list_runs(status=cast("RunStatus | None", status), definition=definition, limit=limit)
    data = [_run_row(r) for r in rows]
    if json_:
        print(json.dumps({"total": total, "runs": data}, default=str))
        return 0
    cells = [[d["run_id"], d["definition"], d["status"], d["outcome"] or "", d["trigger"], _starter(r),
              (d["created_at"] or "")[:19], f"{d['duration_s']:.2f}s" if d["duration_s"] is not None else ""]
             for d, r in zip(data, rows, strict=True)]
    table(["run", "definition", "status", "outcome", "trigger", "by", "created", "duration"], cells, ids=("run",),
          drop=("duration", "trigger", "created", "by", "outcome"), wide=wide)
    out.print(f"[dim]{len(data)} of {total} run(s)[/]")
    return 0


@runs_app.command(name="show")
def runs_show(run_id: str, *, json_: Annotated[bool, Parameter(name="--json")] = False) -> int:
    """Show a run and its visits with their context diffs.

    Parameters
    ----------
    run_id
        The run.
    json_
        Print JSON.
    """
    from flows.store import visits as visit_store

    run_rec = _find_run(run_id)
    if run_rec is None:
        return 2
    visits = visit_store.visits_for_run(run_id)
    where = _where_it_ran(run_rec)
    usage = _usage(run_rec)
    if json_:
        print(json.dumps({"run": {**_run_row(run_rec), **where, "started": _started(run_rec), "usage": usage},
                          "context": run_rec.context,
                          "visits": [v.model_dump(mode="json") for v in visits]}, default=str))
        return 0
    r = _run_row(run_rec)
    out.print(f"[bold]{r['run_id']}[/] {escape(r['definition'])} [bold]{r['status']}[/] outcome={r['outcome']}")
    out.print(f"  started {escape(_started(run_rec))}" + (f" at {r['created_at'][:19]}" if r["created_at"] else ""))
    if usage["llm_calls"]:
        out.print(f"  model calls: {usage['llm_calls']}, tokens: {usage['tokens']} ({usage['tokens_in']} in, "
                  f"{usage['tokens_out']} out), cost: ${usage['cost_usd']:.4f}")
    else:
        out.print("  model calls: none")
    ran = [f"{k}={v}" for k, v in where.items() if v is not None]
    if ran:
        out.print(f"  [dim]{' '.join(ran)}[/]")
    if run_rec.error:
        out.print(f"  [red]{run_rec.error}[/]")
    for v in visits:
        indent = "    " if v.parent_visit_id else "  "
        label = f"{v.node_id}[{v.item_key}]" if v.item_key else v.node_id
        out.print(f"{indent}#{v.sequence} {label} [dim]{v.node_type}[/] {v.status} attempt={v.attempt}"
                  + (f" {v.duration_ms} ms" if v.duration_ms is not None else "")
                  + (f" → {v.next_node}" if v.next_node else ""))
        for op in v.context_diff or []:
            out.print(f"{indent}    {op['op']} {op['path']}: {json.dumps(op.get('old'), default=str)} → "
                      f"{json.dumps(op.get('new'), default=str)}")
        if v.error:
            out.print(f"{indent}    [red]{v.error}[/]")
    return 0


@runs_app.command(name="resume")
def runs_resume(
    run_id: str,
    *,
    json_: Annotated[bool, Parameter(name="--json")] = False,
    record: Annotated[str | None, Parameter(name="--record")] = None,
    replay: Annotated[str | None, Parameter(name="--replay")] = None,
) -> int:
    """Re-run a failed or crashed run from its last completed visit (completed visits are not repeated).

    Parameters
    ----------
    run_id
        The run.
    json_
        Print the result as JSON on the last line.
    record
        Store every model response in this cassette file.
    replay
        Answer every model call from this cassette file.
    """
    from flows import runs

    _prepare_runtime()
    run_rec = _find_run(run_id)
    if run_rec is None:
        return 2
    try:
        runs.resumable(run_rec)
    except runs.ResumeRefused as exc:
        return error(exc)
    from flows.catalog import DefinitionNotFound
    from flows.runs.sources import catalog_for_run

    try:
        catalog = catalog_for_run(run_rec)  # the folders (and file) the run started from, tools included
    except DefinitionNotFound as exc:
        return error(f"run {run_id}: {exc.args[0]}")
    console = err if json_ else out
    console.print(f"resuming [bold]{run_id}[/] ({run_rec.definition_name})")
    result = runs.resume(run_id, catalog=catalog, listener=_progress_listener(console), record=record, replay=replay)
    _print_result(result.to_dict(), json_, console)
    return EXIT.get(result.status, 1)


@runs_app.command(name="cancel")
def runs_cancel(run_id: str, *, who: Who = Who()) -> int:
    """Cancel a run: a running run stops before its next node; a paused run's tasks close.

    Parameters
    ----------
    run_id
        The run.
    """
    from flows import runs

    found = _run_and_actor(run_id, who)
    if isinstance(found, int):
        return found
    run_rec, me = found
    try:
        status = runs.cancel(run_rec.id, actor=me.name)
    except runs.AlreadyEnded as exc:
        return error(exc, code=1)
    out.print(f"run {run_rec.id}: {'cancel requested' if status == 'cancelling' else 'cancelled'}")
    return 0


Why = Annotated[str, Parameter(name="--why", help="Why (kept in the run's trail).")]
NoResume = Annotated[bool, Parameter(name="--no-resume", negative=(), help="Record the control; do not resume the run yet.")]


def _control(run_id: str, apply: Any, done: str, no_resume: bool, who: Who) -> int:
    """Apply an operator control to a stopped run as the user ``who`` proves, then resume it here
    (unless ``no_resume``)."""
    from flows.runs.controls import ControlRefused

    found = _run_and_actor(run_id, who)
    if isinstance(found, int):
        return found
    run_rec, me = found
    try:
        what = apply(run_rec.id, me.name)
    except ControlRefused as exc:
        return error(exc, code=1)
    out.print(f"run {run_rec.id}: {done.format(what)}")
    if run_rec.status == "paused":
        out.print("  its waiting process goes on from there (the task it waited for is withdrawn)")
        return 0
    if no_resume:
        out.print("  not resumed (--no-resume): `ergon runs resume` continues it")
        return 0
    return runs_resume(run_rec.id)


@runs_app.command(name="advance")
def runs_advance(run_id: str, *, to: str, why: Why, no_resume: NoResume = False, who: Who = Who()) -> int:
    """Admins: move a failed or crashed run out of its current node through a declared exit, then resume it.

    Parameters
    ----------
    run_id
        The run.
    to
        The exit's target node.
    """
    from flows.runs import controls

    return _control(run_id, lambda rid, actor: controls.advance(rid, to, actor=actor, why=why),
                    f"advanced from `{{}}` to `{to}`", no_resume, who)


@runs_app.command(name="retry")
def runs_retry(run_id: str, *, node: str | None = None, why: Why, no_resume: NoResume = False,
               who: Who = Who()) -> int:
    """Admins: re-enter the current node of a failed or crashed run (or another it visited), then resume it.

    Parameters
    ----------
    run_id
        The run.
    node
        The node to re-enter (default: the current one).
    """
    from flows.runs import controls

    return _control(run_id, lambda rid, actor: controls.retry_node(rid, node, actor=actor, why=why),
                    "re-enters `{}`", no_resume, who)


@runs_app.command(name="skip")
def runs_skip(run_id: str, *, why: Why, no_resume: NoResume = False, who: Who = Who()) -> int:
    """Admins: skip the current node of a failed or crashed run (where it is skippable), then resume it.

    Parameters
    ----------
    run_id
        The run.
    """
    from flows.runs import controls

    return _control(run_id, lambda rid, actor: controls.skip_node(rid, actor=actor, why=why),
                    "skipped its node; it goes on at `{}`", no_resume, who)


@runs_app.command(name="set-context")
def runs_set_context(run_id: str, *, set_: Annotated[list[str], Parameter(name="--set", negative=())], why: Why,
                     no_resume: NoResume = False, who: Who = Who()) -> int:
    """Admins: change fields of a failed or crashed run's context (checked against its schema), then resume it.

    Parameters
    ----------
    run_id
        The run.
    set_
        KEY=VALUE (repeatable); values are JSON when they parse as JSON.
    """
    from flows.cli.inputs import parse_pairs
    from flows.runs import controls

    updates, problems = parse_pairs(set_)
    if problems:
        return diagnostics(problems)
    def apply(rid: str, actor: str) -> str:
        controls.set_context(rid, updates, actor=actor, why=why)
        return ", ".join(sorted(updates))

    return _control(run_id, apply, "context set ({})", no_resume, who)


@runs_app.command(name="explain")
def runs_explain(run_id: str, *, node: str | None = None,
                 guard: Annotated[int | None, Parameter(validator=bounds.GUARD)] = None) -> int:
    """Explain the definition a run executes, one node, or one exit of it, with the run's context.

    Parameters
    ----------
    run_id
        The run.
    node
        The node to explain (default: the whole definition).
    guard
        The index of one of the node's exits (0 = the first) to explain.
    """
    import asyncio

    from flows.catalog import DefinitionNotFound
    from flows.runs import snapshot_compiled
    from flows.runs.explain import ExplainRefused, explain
    from flows.runs.sources import catalog_for_run

    run_rec = _find_run(run_id)
    if run_rec is None:
        return 2
    try:
        catalog = catalog_for_run(run_rec)
    except DefinitionNotFound as exc:
        return error(f"run {run_id}: {exc.args[0]}")
    plan = snapshot_compiled(run_rec, catalog).plan
    try:
        text, by_model = asyncio.run(explain(plan, node=node, guard=guard, context=dict(run_rec.context or {}),
                                             run_id=run_rec.id, environments=catalog.environments()))
    except ExplainRefused as exc:
        return error(exc)
    print(text)
    if not by_model:
        err.print("[dim](the engine's outline: no model is configured — set ERGON_MODEL for a written explanation)[/]")
    return 0


@runs_app.command(name="message")
def runs_message(run_id: str, text: str, *, who: Who = Who()) -> int:
    """Post a message to a supervised run's supervisor (it reads it with the run's next step).

    Parameters
    ----------
    run_id
        The run.
    text
        The message.
    """
    from flows.runs.supervision import MessageRefused, post_message

    found = _run_and_actor(run_id, who)
    if isinstance(found, int):
        return found
    run_rec, me = found
    try:
        post_message(run_rec, text, actor=me.name)
    except MessageRefused as exc:
        return error(exc, code=1)
    out.print(f"run {run_rec.id}: message posted; the supervisor reads it with the run's next step")
    return 0


@runs_app.command(name="export")
def runs_export(run_id: str) -> int:
    """Print one JSON document with everything about a run.

    Parameters
    ----------
    run_id
        The run.
    """
    from flows.store import export as export_store

    if _find_run(run_id) is None:
        return 2
    print(json.dumps(export_store.export_run(run_id), indent=2, default=str))
    return 0
