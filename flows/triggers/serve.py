"""`ergon serve`: every triggered definition of the folder, from one local process.

* Definitions with cron/interval triggers become Prefect deployments (one per definition, one
  schedule per trigger — :mod:`flows.trigger_schedules`) served with Prefect's ``serve``
  (:mod:`flows.prefect.serve`). Their entrypoint is the module attribute
  ``flows.prefect.deployments.flow_<name>`` (the same flows
  ``ergon deploy`` gives workers); the runner starts each scheduled run in its own subprocess,
  which imports that attribute and compiles the definition from the folder.
* ``pause_on_shutdown=False``: stopping serve (Ctrl-C, SIGTERM) leaves the schedules active in
  Prefect, so they are not silently paused; runs due while nothing serves wait as Scheduled and
  start when serve (or a worker) is back. A failed run changes nothing in its schedule.
* Webhook triggers get the HTTP server of :mod:`flows.triggers.webhooks` on 127.0.0.1.
* On-complete triggers need nothing here: the finishing run dispatches them.
* A definition ``ergon deploy`` gave a work pool is not served: its deployment carries its
  schedules and its pool's workers run them. Serving it too would register ``serve``'s deployment
  under the same name, taking the schedules — and every run started through the deployment — off
  the pool and onto this host (:func:`leave_deployed`).

Definitions that do not compile are reported and left out; the others are served.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from typing import Any

from flows.trigger_refs import SCHEDULE_KINDS, TriggerRef, all_refs


@dataclass
class ServePlan:
    """What ``serve`` will run, decided before anything starts (printed by the CLI)."""

    scheduled: dict[str, list[TriggerRef]] = field(default_factory=dict)  # definition → its cron/interval triggers
    webhooks: list[TriggerRef] = field(default_factory=list)
    chained: list[TriggerRef] = field(default_factory=list)
    broken: dict[str, list[Any]] = field(default_factory=dict)  # definition → diagnostics
    on_pools: dict[str, tuple[str, list[TriggerRef]]] = field(default_factory=dict)  # definition → (pool, schedules)

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


def leave_deployed(plan: ServePlan) -> None:
    """Move the scheduled definitions that have a deployment on a work pool to ``plan.on_pools``:
    their schedules are the deployment's, run by the pool's workers, not by this process. Prefect
    is asked only when there are scheduled definitions."""
    if not plan.scheduled:
        return
    from flows.prefect.launch import work_pool_of

    for definition in list(plan.scheduled):
        pool = work_pool_of(definition)
        if pool:
            plan.on_pools[definition] = (pool, plan.scheduled.pop(definition))


def pin_environment() -> None:
    """Make the folder and the state home absolute for the runner's subprocesses (they may start
    in another working directory)."""
    from flows.settings import definitions_dir, ergon_home

    os.environ["ERGON_DEFINITIONS"] = str(definitions_dir().resolve())
    os.environ["ERGON_HOME"] = str(ergon_home())


def serve_forever(plan: ServePlan, catalog: Any, *, webhook_port: int, on_ready: Any = None, limit: int | None = None) -> None:
    """Run the webhook server and the Prefect runner until interrupted (blocks)."""
    from flows.triggers.webhooks import WebhookServer

    pin_environment()
    webhook_server = WebhookServer(plan.webhooks, port=webhook_port).start() if plan.webhooks else None
    try:
        deployments = []
        if plan.scheduled:
            from flows.prefect.serve import runner_deployments

            deployments = runner_deployments(plan.scheduled, catalog)
        if on_ready is not None:
            on_ready(webhook_server, deployments)
        if deployments:
            from flows.prefect.serve import serve_deployments

            serve_deployments(deployments, limit=limit)
        else:
            threading.Event().wait()  # webhooks only: wait for Ctrl-C / SIGTERM
    finally:
        if webhook_server is not None:
            webhook_server.stop()
