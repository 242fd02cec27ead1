"""`ergon serve` and `ergon schedules`: triggered definitions served from one process.

`serve` runs the schedules (Prefect's runner) and the webhook server of every triggered
definition in the folder, and the SMTP listener of ``tools/email.yaml``'s ``inbound``, until
Ctrl-C; stopping it does not pause the schedules. `schedules` lists every trigger with its next
and last run, and pauses, resumes or fires one by name (``DEFINITION:INDEX``, or ``DEFINITION``
for all of its triggers).
"""

from __future__ import annotations

import json
from typing import Annotated

from cyclopts import App, Parameter
from rich.console import Console

from flows.cli import bounds
from flows.cli.output import error

schedules_app = App(name="schedules", help="Triggers of the definitions: next/last run, pause, resume, run now.")

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)


def _prepare() -> None:
    from flows.prefect.server import ensure_api_url
    from flows.store import db

    ensure_api_url()
    db.init_db()


def serve(
    *,
    webhook_port: Annotated[int, Parameter(name="--webhook-port", validator=bounds.ANY_PORT)] = 8765,
    limit: Annotated[int | None, Parameter(name="--limit", validator=bounds.LIMIT)] = None,
) -> int:
    """Serve every triggered definition of the folder: schedules, webhooks, email (until Ctrl-C).

    Parameters
    ----------
    webhook_port
        Port of the webhook server on 127.0.0.1 (0 = any free port).
    limit
        Most scheduled runs executing at once (default: no limit).
    """
    from flows.catalog import Catalog
    from flows.trigger_schedules import full_deployment_name
    from flows.triggers.serve import leave_deployed, plan_serve, serve_forever

    _prepare()
    catalog = Catalog.load()
    plan = plan_serve(catalog)
    try:
        inbound = _email_inbound()
    except ValueError as exc:
        return error(str(exc), code=1)
    for name, diagnostics in plan.broken.items():
        err.print(f"[yellow]not serving {name}: it has {len(diagnostics)} error(s)[/] (ergon check)")
        for d in diagnostics[:3]:
            err.print(f"  {d.format()}", markup=False)
    leave_deployed(plan)
    for name, (pool, refs) in sorted(plan.on_pools.items()):
        for ref in refs:
            out.print(f"schedule [bold]{ref.name}[/] runs on work pool {pool} (deployment {full_deployment_name(name)}, "
                      "from `ergon deploy`): not served here")
    if plan.empty and inbound is None:
        if plan.on_pools:
            return error("nothing left to serve here: every scheduled definition runs on its work pool's workers",
                         code=1)
        return error("no definition in the folder has triggers to serve "
                  "(add `triggers:` with cron, interval, webhook, on_complete or on_submission_*, "
                  "or `inbound` to tools/email.yaml)")

    def ready(webhook_server, deployments) -> None:
        from flows.trigger_schedules import describe

        for _definition, refs in sorted(plan.scheduled.items()):
            for ref in refs:
                out.print(f"schedule [bold]{ref.name}[/] {describe(ref.trigger)}"
                          + ("" if ref.trigger.enabled else " [dim](disabled)[/]"))
        for ref in plan.webhooks:
            out.print(f"webhook  [bold]{ref.name}[/] POST {webhook_server.url}{ref.trigger.path}")
        for ref in plan.chained:
            if ref.kind == "on_complete":
                out.print(f"chain    [bold]{ref.name}[/] after {ref.trigger.definition} (dispatched by the finishing run)")
            else:
                out.print(f"on form  [bold]{ref.name}[/] {describe(ref.trigger)} (dispatched by the process that changes it)")
        if listener is not None:
            out.print(f"email    SMTP on {listener.address} (tools/email.yaml: replies to tasks"
                      + "".join(f", {r.address} → {r.definition}" for r in inbound.inbound.start) + ")")
        out.print("[green]ready[/] — Ctrl-C stops serving; the schedules stay active in Prefect")
        out.file.flush()  # a supervisor (or a test) waits for this line

    listener = None
    if inbound is not None:
        from flows.triggers.email import EmailListener

        try:
            listener = EmailListener(inbound).start()
        except Exception as exc:  # noqa: BLE001 - aiosmtpd reports a taken port in several ways
            return error(f"the email listener could not start on {inbound.inbound.host}:{inbound.inbound.port}: {exc}",
                         code=1)
    try:
        serve_forever(plan, catalog, webhook_port=webhook_port, on_ready=ready, limit=limit)
    except KeyboardInterrupt:
        pass
    except OSError as exc:
        return error(f"{exc} (is another `ergon serve` using port {webhook_port}? pass --webhook-port)", code=1)
    finally:
        if listener is not None:
            listener.stop()
    out.print("stopped; schedules left active")
    return 0


def _email_inbound():
    """The email configuration when it has an ``inbound`` listener to serve, else None;
    ValueError naming the problem of a configuration with errors."""
    from flows.email.config import EmailNotConfigured, current

    try:
        config = current(required=False)
    except EmailNotConfigured as exc:
        raise ValueError(f"{exc}: not serving email") from None
    return config if config is not None and config.inbound is not None else None


@schedules_app.command(name="list")
def schedules_list(*, json_: Annotated[bool, Parameter(name="--json")] = False) -> int:
    """List every trigger: definition, kind, schedule, next run, last run and its status, paused.

    Parameters
    ----------
    json_
        Print JSON.
    """
    from rich.table import Table

    from flows.triggers.control import rows

    _prepare()
    found = rows()
    if json_:
        print(json.dumps({"triggers": [r.as_dict() for r in found]}))
        return 0
    table = Table("trigger", "kind", "schedule", "as", "next run", "last run", "status", "paused")
    for r in found:
        table.add_row(r.name, r.kind, r.schedule, r.as_user, _when(r.next_run_at), _when(r.last_run_at),
                      r.last_status or "", "yes" if r.paused else ("disabled" if not r.enabled else ""))
    out.print(table)
    out.print(f"[dim]{len(found)} trigger(s)[/]")
    return 0


@schedules_app.default
def schedules_default(*, json_: Annotated[bool, Parameter(name="--json")] = False) -> int:
    """Same as `ergon schedules list`."""
    return schedules_list(json_=json_)


def _when(value) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S %Z").strip() if value else ""


def _set(name: str, paused: bool) -> int:
    from flows.triggers.control import set_paused
    from flows.trigger_refs import UnknownTrigger

    _prepare()
    try:
        refs = set_paused(name, paused)
    except UnknownTrigger as exc:
        return error(exc)
    for ref in refs:
        out.print(f"{'paused' if paused else 'resumed'} [bold]{ref.name}[/] ({ref.kind})")
    return 0


@schedules_app.command(name="pause")
def schedules_pause(name: str) -> int:
    """Pause a trigger (DEFINITION:INDEX) or all triggers of a definition (DEFINITION).

    Parameters
    ----------
    name
        DEFINITION:INDEX as listed, or DEFINITION.
    """
    return _set(name, True)


@schedules_app.command(name="resume")
def schedules_resume(name: str) -> int:
    """Resume a paused trigger (DEFINITION:INDEX) or all triggers of a definition.

    Parameters
    ----------
    name
        DEFINITION:INDEX as listed, or DEFINITION.
    """
    return _set(name, False)


@schedules_app.command(name="run-now")
def schedules_run_now(name: str) -> int:
    """Start a cron/interval trigger's run now, with its input and identity (runs in the background).

    Parameters
    ----------
    name
        DEFINITION:INDEX as listed, or DEFINITION (each of its schedules).
    """
    from flows.runs import StartRefused
    from flows.triggers.control import run_now
    from flows.trigger_refs import UnknownTrigger

    _prepare()
    try:
        started = run_now(name)
    except UnknownTrigger as exc:
        return error(exc)
    except StartRefused as exc:
        for d in exc.problems:
            err.print(d.format(), markup=False)
        return 2
    for one in started:
        out.print(f"started run [bold]{one.run_id}[/] {one.where} (ergon runs show {one.run_id})")
    return 0
