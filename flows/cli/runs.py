"""Commands that run things: `run`, `runs list|show|resume|cancel|export`, `server start|stop|status`."""

from __future__ import annotations

import asyncio
import getpass
import json
import os
import sys
from typing import Annotated, Any

from cyclopts import App, Parameter
from rich.console import Console

from flows.cli import app

runs_app = App(name="runs", help="Inspect and control runs.")
server_app = App(name="server", help="The local Prefect server Ergon uses when PREFECT_API_URL is not set.")
app.command(runs_app)
app.command(server_app)

EXIT = {"completed": 0, "paused": 0, "failed": 1, "crashed": 1, "cancelled": 1}
out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)


def current_user() -> str:
    return os.environ.get("ERGON_USER") or getpass.getuser()


def _prepare_runtime() -> None:
    """Prefect API + store schema + crash detection: what every command touching runs needs."""
    from flows.server import ensure_api_url
    from flows.settings import HEARTBEAT_TIMEOUT_SECONDS
    from flows.store import db, repo

    ensure_api_url()
    db.init_db()
    for run in repo.mark_stale_runs_crashed(heartbeat_timeout=HEARTBEAT_TIMEOUT_SECONDS):
        err.print(f"[yellow]run {run.id} ({run.definition_name}) was left running by a dead process: marked crashed[/]")


def _progress_listener(console: Console):
    icons = {"started": "[cyan]▶[/]", "completed": "[green]✓[/]", "failed": "[red]✗[/]", "skipped": "[dim]↷[/]",
             "cancelled": "[yellow]■[/]", "paused": "[yellow]⏸[/]"}

    def listen(event: str, node: str, detail: dict[str, Any]) -> None:
        if event == "paused":
            task = detail["task_id"]
            console.print(f"  {icons['paused']} {node} waits for a person: [bold]{detail.get('title', '')}[/]\n"
                          f"      task {task} — answer with: ergon tasks answer {task} --set FIELD=VALUE …\n"
                          f"      (or from the dashboard, or Prefect's own resume form); this command waits")
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


def execute_run(compiled: Any, inputs: dict[str, Any], *, catalog: Any, run_id: str | None = None,
                trigger: str = "manual", listener: Any = None, record: str | None = None,
                replay: str | None = None, definition_version: int | None = None) -> dict[str, Any]:
    """Run a compiled definition in this process through its Prefect flow; returns the result dict.

    ``record``/``replay`` name a cassette file: every model response is stored in it, or every
    model call is answered from it (a miss fails the node loudly). ``definition_version`` is the
    published version being run; without it, a draft identical to a published version records
    that version's number.
    """
    from flows.backend import REQUEST, RunRequest, build_flow
    from flows.llm.cassettes import use_cassette
    from flows.store import repo

    plan = compiled.plan
    content_hash = repo.snapshot_definition(compiled.content)
    if definition_version is None:
        from flows.versions import version_of_content

        definition_version = version_of_content(plan.name, content_hash)
    request = RunRequest(run_id=run_id, trigger=trigger, started_by=current_user(), content_hash=content_hash,
                         listener=listener, catalog=catalog)
    if run_id is None:
        run = repo.create_run(plan.name, content_hash=content_hash, inputs=inputs, trigger=trigger,
                              started_by=request.started_by, definition_version=definition_version)
        request.run_id = run.id
    elif definition_version is not None:
        repo.update_run(run_id, definition_version=definition_version)
    flow = build_flow(plan)
    accepted = set(plan.input_schema.get("properties", {}))
    request.overrides = {k: v for k, v in inputs.items() if k not in accepted}
    token = REQUEST.set(request)
    state = None
    try:
        with use_cassette(record=record, replay=replay):
            state = asyncio.run(flow(**{k: v for k, v in inputs.items() if k in accepted}, return_state=True))
    except KeyboardInterrupt:
        if repo.run_status(request.run_id) not in ("cancelled", "completed", "failed", "crashed"):
            repo.set_run_status(request.run_id, "cancelled", error="interrupted (Ctrl-C)")
    finally:
        REQUEST.reset(token)
    run = repo.get_run(request.run_id)
    if run.status == "pending":  # Prefect refused the call before the flow body ran
        message = getattr(state, "message", None) or "the flow did not start"
        run = repo.set_run_status(run.id, "failed", error=message)
    return {"run_id": run.id, "status": run.status, "outcome": run.outcome, "context": run.context, "error": run.error}


@app.command
def run(
    name: str,
    *,
    input: Annotated[list[str] | None, Parameter(name=["--input", "-i"])] = None,
    input_file: Annotated[str | None, Parameter(name="--input-file")] = None,
    json_: Annotated[bool, Parameter(name="--json")] = False,
    record: Annotated[str | None, Parameter(name="--record")] = None,
    replay: Annotated[str | None, Parameter(name="--replay")] = None,
    run_id: Annotated[str | None, Parameter(name="--run-id", show=False)] = None,
    version: Annotated[int | None, Parameter(name="--version")] = None,
) -> int:
    """Validate a definition, run it on Prefect, show progress node by node, wait for the end.

    Parameters
    ----------
    name
        Definition name, or a path to a definition file.
    input
        KEY=VALUE (repeatable); values are JSON when they parse as JSON.
    input_file
        YAML/JSON file with the inputs.
    json_
        Print one JSON object {run_id, status, outcome, context, error} as the last line.
    record
        Store every model response in this cassette file.
    replay
        Answer every model call from this cassette file (a miss fails loudly).
    run_id
        Execute this pending run (recorded by :mod:`flows.launch`) instead of recording a new one.
    version
        Run this published version (see `ergon versions NAME`) instead of the draft file.
    """
    from compiler import CompileError
    from flows.catalog import Catalog, DefinitionNotFound
    from flows.cli.inputs import parse_pairs, read_input_file, validate_inputs

    console = err if json_ else out
    catalog = Catalog.load(name)
    try:
        if version is not None:
            from flows.versions import compiled_version

            compiled = compiled_version(name, version, catalog)
        else:
            compiled = catalog.compile(name)
    except DefinitionNotFound as exc:
        err.print(f"[red]error:[/] {exc.args[0]}")
        return 2
    except LookupError as exc:  # flows.versions.VersionNotFound
        err.print(f"[red]error:[/] {exc}")
        return 2
    except CompileError as exc:
        for d in exc.diagnostics:
            print(d.format(), file=sys.stderr)
        return 2
    inputs, problems = read_input_file(input_file) if input_file else ({}, [])
    pairs, more = parse_pairs(input or [])
    inputs.update(pairs)
    problems += more or validate_inputs(compiled.plan, inputs, source=input_file or "--input")
    if problems:
        for d in problems:
            print(d.format(), file=sys.stderr)
        return 2
    _prepare_runtime()
    trigger = "manual"
    if run_id is not None:
        from flows.store import repo

        pending = repo.get_run(run_id)
        if pending is None or pending.status != "pending":
            err.print(f"[red]error:[/] run {run_id} is not a pending run")
            return 2
        trigger = pending.trigger
    console.print(f"[bold]{compiled.plan.name}[/] [dim]version {compiled.plan.version}[/]")
    result = execute_run(compiled, inputs, catalog=catalog, listener=_progress_listener(console),
                         record=record, replay=replay, run_id=run_id, trigger=trigger,
                         definition_version=getattr(compiled, "version", None) or None)
    _print_result(result, json_, console)
    return EXIT.get(result["status"], 1)


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


def _find_run(run_id: str) -> Any:
    """The run, or None after saying so (commands then exit 2)."""
    from flows.store import db, repo

    db.init_db()
    run_rec = repo.get_run(run_id)
    if run_rec is None:
        err.print(f"[red]error:[/] no run {run_id}")
    return run_rec


@runs_app.command(name="list")
def runs_list(
    *,
    status: str | None = None,
    definition: str | None = None,
    limit: int = 50,
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
        At most this many rows.
    json_
        Print JSON.
    """
    from rich.table import Table

    from flows.store import db, repo

    db.init_db()
    rows, total = repo.list_runs(status=status, definition=definition, limit=limit)
    data = [_run_row(r) for r in rows]
    if json_:
        print(json.dumps({"total": total, "runs": data}, default=str))
        return 0
    table = Table("run", "definition", "status", "outcome", "trigger", "by", "created", "duration")
    for d in data:
        table.add_row(d["run_id"], d["definition"], d["status"], d["outcome"] or "", d["trigger"], d["started_by"] or "",
                      (d["created_at"] or "")[:19], f"{d['duration_s']:.2f}s" if d["duration_s"] is not None else "")
    out.print(table)
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
    from flows.store import repo

    run_rec = _find_run(run_id)
    if run_rec is None:
        return 2
    visits = repo.visits_for_run(run_id)
    if json_:
        print(json.dumps({"run": _run_row(run_rec), "context": run_rec.context,
                          "visits": [v.model_dump(mode="json") for v in visits]}, default=str))
        return 0
    r = _run_row(run_rec)
    out.print(f"[bold]{r['run_id']}[/] {r['definition']} [bold]{r['status']}[/] outcome={r['outcome']} by={r['started_by']}")
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
    from flows.catalog import Catalog
    from flows.store import repo

    _prepare_runtime()
    run_rec = _find_run(run_id)
    if run_rec is None:
        return 2
    if run_rec.status not in ("failed", "crashed"):
        err.print(f"[red]error:[/] run {run_id} is {run_rec.status}; only failed or crashed runs resume")
        return 2
    catalog = Catalog.load()
    compiled = snapshot_compiled(run_rec, catalog)
    console = err if json_ else out
    console.print(f"resuming [bold]{run_id}[/] ({compiled.plan.name})")
    repo.set_run_status(run_id, "pending")
    result = execute_run(compiled, dict(run_rec.inputs or {}), catalog=catalog, run_id=run_id,
                         trigger=run_rec.trigger, listener=_progress_listener(console), record=record, replay=replay)
    _print_result(result, json_, console)
    return EXIT.get(result["status"], 1)


def snapshot_compiled(run_rec: Any, catalog: Any) -> Any:
    """The Plan of the exact content a run started with (its pinned snapshot)."""
    from flows.store import repo

    content = repo.get_snapshot(run_rec.content_hash) if run_rec.content_hash else None
    if content is None:
        return catalog.compile(run_rec.definition_name)
    return catalog.compile_content(run_rec.definition_name, content, label=".snapshot")


@runs_app.command(name="cancel")
def runs_cancel(run_id: str) -> int:
    """Cancel a run: a running run stops before its next node; a paused run's tasks close.

    Parameters
    ----------
    run_id
        The run.
    """
    from flows.cancel import AlreadyEnded, cancel_run

    run_rec = _find_run(run_id)
    if run_rec is None:
        return 2
    try:
        status = cancel_run(run_rec.id, actor=current_user())
    except AlreadyEnded as exc:
        err.print(str(exc))
        return 1
    out.print(f"run {run_rec.id}: {'cancel requested' if status == 'cancelling' else 'cancelled'}")
    return 0


@runs_app.command(name="export")
def runs_export(run_id: str) -> int:
    """Print one JSON document with everything about a run.

    Parameters
    ----------
    run_id
        The run.
    """
    from flows.store import repo

    if _find_run(run_id) is None:
        return 2
    print(json.dumps(repo.export_run(run_id), indent=2, default=str))
    return 0


# ------------------------------------------------------------------------------ server
@server_app.command(name="start")
def server_start(*, port: int = 4200) -> int:
    """Start the local Prefect server (kept under ERGON_HOME/prefect).

    Parameters
    ----------
    port
        Preferred port (a free one is used if taken).
    """
    from flows.server import start

    info = start(port)
    out.print(f"Prefect server at {info.url} (pid {info.pid})")
    return 0


@server_app.command(name="stop")
def server_stop() -> int:
    """Stop the local Prefect server."""
    from flows.server import stop

    out.print("stopped" if stop() else "no local server was running")
    return 0


@server_app.command(name="status")
def server_status() -> int:
    """Show whether the Prefect server is up."""
    from flows.server import status

    info = status()
    if info is None:
        out.print("no Prefect server is running (ergon run starts one)")
        return 1
    out.print(f"Prefect server at {info.url}" + (f" (pid {info.pid}, started by ergon)" if info.managed else " (PREFECT_API_URL)"))
    return 0
