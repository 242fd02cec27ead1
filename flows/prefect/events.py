"""Ergon's moments as Prefect events, for Prefect automations to act on.

The hooks of :mod:`flows.moments` send, through Prefect's own events client (``emit_event``,
batched by Prefect's events worker and sent with the process's Prefect settings):

==========================  =====================================================================
event                       when
==========================  =====================================================================
``ergon.run.started``       a run starts executing (also when it continues after a resume)
``ergon.run.completed``     a run ends; also ``…failed``, ``…crashed``, ``…cancelled``
``ergon.task.created``      a human task waits for a person
``ergon.task.answered``     a task got its valid answer
``ergon.task.expired``      a task's timeout passed unanswered
``ergon.submission.updated`` a submission was changed (``…created`` when it was made)
``ergon.budget.exceeded``   a run's or a node's budget stopped a node
==========================  =====================================================================

Every event's resource is the Ergon object (``ergon.run.<id>``, ``ergon.task.<id>``,
``ergon.submission.<id>``) with labels an automation can match on (``ergon.definition``,
``ergon.status``, ``ergon.deployment``, ``ergon.node``, ``ergon.assignee``, ``ergon.form``); its
related resources are the run (role ``ergon-run``) and the run's Prefect flow run
(``prefect.flow-run.<id>``, role ``flow-run``). Payloads carry what a notification needs
(outcome, error, a task's title and who answered) and never the run's context: it may hold
what only the run's readers may see.

An event is sent only when this process knows a Prefect API that answers (the user's, or
Ergon's local server while it runs): no command starts a server to send one, and Prefect is
imported only when there is somewhere to send it.
"""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger("ergon.events")

#: A run's status → the event of entering it.
RUN_EVENTS = {"completed": "ergon.run.completed", "failed": "ergon.run.failed", "crashed": "ergon.run.crashed",
              "cancelled": "ergon.run.cancelled"}
_known_api = False


def on_run_status(run: Any, previous: str) -> None:
    if run.status == "running" and previous != "running" and previous != "paused":
        emit("ergon.run.started", _run_resource(run), _related(run), {"trigger": run.trigger,
                                                                      "started_by": run.started_by})
    elif run.status in RUN_EVENTS and previous != run.status:
        emit(RUN_EVENTS[run.status], _run_resource(run), _related(run),
             {"outcome": run.outcome, "error": run.error, "error_kind": run.error_kind})


def on_task_created(task: Any) -> None:
    _task_event("ergon.task.created", task)


def on_task_answered(task: Any) -> None:
    _task_event("ergon.task.answered", task, answered_by=task.answered_by)


def on_task_expired(task: Any) -> None:
    _task_event("ergon.task.expired", task)


def on_submission_changed(event: str, submission_id: str, who: str | None) -> None:
    from flows.store import submissions as submission_store

    kind = "created" if event.endswith("created") else "updated"
    row = submission_store.get_submission(submission_id)
    resource = {"prefect.resource.id": f"ergon.submission.{submission_id}",
                "ergon.form": str(getattr(row, "form_name", "") or "")}
    emit(f"ergon.submission.{kind}", resource, [], {"by": who})


def on_budget_exceeded(run_id: str, node_id: str, reason: str) -> None:
    from flows.store import runs as run_store

    run = run_store.get_run(run_id)
    if run is not None:
        emit("ergon.budget.exceeded", _run_resource(run), _related(run), {"node": node_id, "reason": reason})


def emit(event: str, resource: dict[str, str], related: list[dict[str, str]], payload: dict[str, Any]) -> None:
    """Send one event when this process knows a Prefect API (see the module docstring)."""
    if not _api_known():
        return
    from prefect.events import emit_event

    emit_event(event=event, resource=resource, related=related,
               payload={k: v for k, v in payload.items() if v is not None})


def _api_known() -> bool:
    """Whether a Prefect API is there to hear: the one Prefect's configuration names (or Ergon's
    local server), answering its health check (no credentials needed; a refused connection on
    loopback costs a millisecond). Once it answered it stays known for the process: Prefect's
    events worker then queues and retries through a restart of the server itself."""
    global _known_api
    if not _known_api:
        from flows.prefect.server import configured, healthy

        api = configured()
        _known_api = api is not None and healthy(api.url)
    return _known_api


def _run_resource(run: Any) -> dict[str, str]:
    return {"prefect.resource.id": f"ergon.run.{run.id}", "prefect.resource.name": run.definition_name,
            "ergon.definition": run.definition_name, "ergon.status": run.status, "ergon.trigger": run.trigger or "",
            "ergon.deployment": run.deployment or ""}


def _related(run: Any) -> list[dict[str, str]]:
    related = [{"prefect.resource.id": f"ergon.run.{run.id}", "prefect.resource.role": "ergon-run",
                "ergon.definition": run.definition_name}]
    if run.prefect_flow_run_id:
        related.append({"prefect.resource.id": f"prefect.flow-run.{run.prefect_flow_run_id}",
                        "prefect.resource.role": "flow-run"})
    return related


def _task_event(event: str, task: Any, **payload: Any) -> None:
    from flows.store import runs as run_store

    run = run_store.get_run(task.run_id)
    resource = {"prefect.resource.id": f"ergon.task.{task.id}", "prefect.resource.name": task.title or task.node_id,
                "ergon.node": task.node_id, "ergon.assignee": task.assignee or "",
                "ergon.definition": run.definition_name if run is not None else ""}
    emit(event, resource, _related(run) if run is not None else [],
         {"title": task.title, "assignee": task.assignee, "status": task.status, **payload})
