"""Flow runs a dead process left open, given the final state Ergon's store knows.

Prefect only hears how a flow run ended from the process that executes it. A process killed
(``kill -9``, a lost machine) leaves its flow run ``Running`` or ``Paused`` with nothing executing
it, in two windows:

* before the run ended in the store: the run is marked ``crashed``
  (:func:`flows.runs.lifecycle.detect_crashed`), and its flow runs become ``Crashed``, with
  their open subflow runs (a human task's, a workstream's, a sub-process run's);
* after the store recorded the run's end but before Prefect's engine reported the flow run's
  final state: the flow runs get the store's state (``Completed``, ``Failed``, ``Cancelled``),
  so Prefect's UI, automations and concurrency slots agree with the store.

Calls go over plain HTTP (:mod:`flows.prefect.rest`): ``ergon runs list`` makes them. A flow run
already in a final state is left as it is, so two processes settling the same run agree.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from flows.prefect import rest

#: The Prefect state a run the store ended gives its open flow runs.
PREFECT_STATE = {"completed": "COMPLETED", "failed": "FAILED", "cancelled": "CANCELLED", "crashed": "CRASHED"}
_OPEN = ("PENDING", "RUNNING", "PAUSED")


def unrecorded_flow_runs(run_id: str, before: Any = None) -> list[str]:
    """The flow runs of an Ergon run that may be left ``Pending``, ``Running`` or ``Paused``
    without the run knowing them: a run's top-level flow runs are made with the run's id as their
    name (:func:`flows.prefect.build.call_flow`), and a process killed after Prefect made one but
    before the flow body recorded its id leaves one the store cannot name. Only those created
    before ``before`` (an aware datetime: when the run was found stopped) are returned, so a
    resume that started since is never among them."""
    body = {"flow_runs": {"name": {"any_": [run_id]}, "state": {"type": {"any_": list(_OPEN)}}}, "limit": 50}
    http, api = rest.client()
    with http:
        rows: Any = rest.post(http, f"{api}/flow_runs/filter", body)
    if before is not None:
        before = before if before.tzinfo else before.replace(tzinfo=timezone.utc)
        rows = [r for r in rows if r.get("created") and datetime.fromisoformat(r["created"]) < before]
    return [r["id"] for r in rows]


def end_flow_runs(flow_run_ids: list[str], status: str, message: str) -> list[str]:
    """Give the flow runs still open among ``flow_run_ids`` the Prefect state of the store's
    run ``status`` (:data:`PREFECT_STATE`); returns the ones that changed."""
    state = PREFECT_STATE[status]
    changed = []
    http, api = rest.client()
    with http:
        for flow_run_id in flow_run_ids:
            response = http.get(f"{api}/flow_runs/{flow_run_id}")
            if response.status_code == 404:
                continue
            response.raise_for_status()
            if (response.json().get("state") or {}).get("type") in _OPEN:
                rest.post(http, f"{api}/flow_runs/{flow_run_id}/set_state",
                          {"state": {"type": state, "message": message}, "force": True})
                changed.append(flow_run_id)
    return changed


def open_subflow_runs(flow_run_ids: list[str]) -> list[str]:
    """The subflow runs still open under ``flow_run_ids``, at any depth: a human task's own flow
    run, a workstream's, a sub-process run's. One the dead process made but had no time to record
    (its task, its child run) is found here only."""
    found: list[str] = []
    parents = list(flow_run_ids)
    http, api = rest.client()
    with http:
        while parents:
            body = {"flow_runs": {"parent_flow_run_id": {"any_": parents}, "state": {"type": {"any_": list(_OPEN)}}},
                    "limit": 200}
            rows: Any = rest.post(http, f"{api}/flow_runs/filter", body)
            parents = [r["id"] for r in rows if r["id"] not in found]
            found += parents
    return found


def mark_crashed(flow_run_ids: list[str], message: str) -> None:
    """Move flow runs a dead process left ``Pending``, ``Running`` or ``Paused``, and their open
    subflow runs, to ``Crashed``: Prefect's own resume form would otherwise accept an answer for
    them and leave them ``Running`` with nothing executing them."""
    end_flow_runs(list(dict.fromkeys(flow_run_ids + open_subflow_runs(flow_run_ids))), "crashed", message)
