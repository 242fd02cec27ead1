"""`ergon serve`: every triggered definition of the folder, from one local process.

* Definitions with cron/interval triggers become Prefect deployments (one per definition, one
  schedule per trigger — :mod:`flows.triggers.schedules`) served with Prefect's ``serve``. Their
  entrypoint is the module attribute ``flows.deployments.flow_<name>`` (the same flows
  ``ergon deploy`` gives workers); the runner starts each scheduled run in its own subprocess,
  which imports that attribute and compiles the definition from the folder.
* ``pause_on_shutdown=False``: stopping serve (Ctrl-C, SIGTERM) leaves the schedules active in
  Prefect, so they are not silently paused; runs due while nothing serves wait as Scheduled and
  start when serve (or a worker) is back. A failed run changes nothing in its schedule.
* Webhook triggers get the HTTP server of :mod:`flows.triggers.webhooks` on 127.0.0.1.
* On-complete triggers need nothing here: the finishing run dispatches them.

Definitions that do not compile are reported and left out; the others are served.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from typing import Any

from flows.triggers.refs import SCHEDULE_KINDS, TriggerRef, all_refs


@dataclass
class ServePlan:
    """What ``serve`` will run, decided before anything starts (printed by the CLI)."""

    scheduled: dict[str, list[TriggerRef]] = field(default_factory=dict)  # definition → its cron/interval triggers
    webhooks: list[TriggerRef] = field(default_factory=list)
    chained: list[TriggerRef] = field(default_factory=list)
    broken: dict[str, list[Any]] = field(default_factory=dict)  # definition → diagnostics

    @property
    def empty(self) -> bool:
        return not (self.scheduled or self.webhooks or self.chained)


def plan_serve(catalog: Any) -> ServePlan:
    """Sort the folder's triggers by how they are served; leave out definitions with errors."""
    from compiler import CompileError

    plan = ServePlan()
    compiled_ok: dict[str, bool] = {}
    for ref in all_refs(catalog):
        if ref.definition not in compiled_ok:
            try:
                catalog.compile(ref.definition)
                compiled_ok[ref.definition] = True
            except CompileError as exc:
                compiled_ok[ref.definition] = False
                plan.broken[ref.definition] = list(exc.diagnostics)
        if not compiled_ok[ref.definition]:
            continue
        if ref.kind in SCHEDULE_KINDS:
            plan.scheduled.setdefault(ref.definition, []).append(ref)
        elif ref.kind == "webhook":
            plan.webhooks.append(ref)
        else:
            plan.chained.append(ref)
    return plan


def pin_environment() -> None:
    """Make the folder and the state home absolute for the runner's subprocesses (they may start
    in another working directory)."""
    from flows.settings import definitions_dir, ergon_home

    os.environ["ERGON_DEFINITIONS"] = str(definitions_dir().resolve())
    os.environ["ERGON_HOME"] = str(ergon_home())


def runner_deployments(plan: ServePlan, catalog: Any) -> list[Any]:
    """One Prefect ``RunnerDeployment`` per definition with schedules (paused triggers inactive)."""
    from prefect.types.entrypoint import EntrypointType

    import flows.deployments as entries
    from flows.store import repo
    from flows.triggers.schedules import deployment_name, prefect_schedules

    out = []
    for definition, refs in sorted(plan.scheduled.items()):
        for ref in refs:  # the list shows every served trigger, even before its first run
            repo.upsert_trigger_state(ref.definition, ref.index, kind=ref.kind, created_by=ref.trigger.as_user)
        paused = {s.trigger_index for s in repo.list_trigger_states(definition) if s.paused}
        flow = getattr(entries, entries.entry_attribute(definition))
        out.append(flow.to_deployment(
            name=deployment_name(definition),
            schedules=prefect_schedules(catalog.compile(definition).plan, paused=paused),
            entrypoint_type=EntrypointType.MODULE_PATH,  # `flows.deployments.flow_<name>`: importable from anywhere
            tags=["ergon", "served"],
        ))
    return out


def serve_forever(plan: ServePlan, catalog: Any, *, webhook_port: int, on_ready: Any = None, limit: int | None = None) -> None:
    """Run the webhook server and the Prefect runner until interrupted (blocks)."""
    from flows.triggers.webhooks import WebhookServer

    pin_environment()
    webhook_server = WebhookServer(plan.webhooks, port=webhook_port).start() if plan.webhooks else None
    try:
        deployments = runner_deployments(plan, catalog)
        if on_ready is not None:
            on_ready(webhook_server, deployments)
        if deployments:
            from prefect import serve

            serve(*deployments, pause_on_shutdown=False, limit=limit, print_starting_message=False)
        else:
            threading.Event().wait()  # webhooks only: wait for Ctrl-C / SIGTERM
    finally:
        if webhook_server is not None:
            webhook_server.stop()
