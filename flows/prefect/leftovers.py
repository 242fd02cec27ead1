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

``ergon runs list`` makes these calls, on Prefect's own client (:func:`flows.prefect.api.client`,
configured by Prefect's settings). A flow run already in a final state is left as it is, so two
processes settling the same run agree.
"""

from __future__ import annotations

from datetime import timezone
from typing import Any
from uuid import UUID

from flows.prefect.api import client

#: The Prefect state a run the store ended gives its open flow runs.
PREFECT_STATE = {"completed": "COMPLETED", "failed": "FAILED", "cancelled": "CANCELLED", "crashed": "CRASHED"}
_OPEN = ("PENDING", "RUNNING", "PAUSED")


#: flow runs read per request (Prefect's API serves at most 200)
PAGE = 200


def _open_flow_runs(prefect_client: Any, **where: Any) -> list[Any]:
    """Every flow run matching ``where`` (fields of Prefect's ``FlowRunFilter``) still Pending,
    Running or Paused, read a page at a time."""
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterState, FlowRunFilterStateType
    from prefect.client.schemas.objects import StateType

    state = FlowRunFilterState(type=FlowRunFilterStateType(any_=[StateType(s) for s in _OPEN]))
    found: list[Any] = []
    while True:
        page = prefect_client.read_flow_runs(flow_run_filter=FlowRunFilter(state=state, **where), limit=PAGE,
                                             offset=len(found))
        found += page
        if len(page) < PAGE:
            return found


def unrecorded_flow_runs(ended: dict[str, Any]) -> dict[str, list[str]]:
    """The flow runs of Ergon runs that may be left ``Pending``, ``Running`` or ``Paused`` without
    the runs knowing them, per run id: a run's top-level flow runs are made with the run's id as
    their name (:func:`flows.prefect.build.call_flow`), and a process killed after Prefect made
    one but before the flow body recorded its id leaves one the store cannot name. ``ended``
    maps each run id to when the run was found stopped (an aware datetime, or None): only flow
    runs created before it count, so a resume that started since is never among them. One query
    for all the runs."""
    if not ended:
        return {}
    from prefect.client.schemas.filters import FlowRunFilterName

    with client() as prefect_client:
        rows = _open_flow_runs(prefect_client, name=FlowRunFilterName(any_=list(ended)))
    found: dict[str, list[str]] = {}
    for row in rows:
        before = ended.get(row.name)
        if before is not None:
            before = before if before.tzinfo else before.replace(tzinfo=timezone.utc)
            if row.created is None or row.created >= before:
                continue
        found.setdefault(row.name, []).append(str(row.id))
    return found


def end_flow_runs(flow_run_ids: list[str], status: str, message: str) -> list[str]:
    """Give the flow runs still open among ``flow_run_ids`` the Prefect state of the store's
    run ``status`` (:data:`PREFECT_STATE`); returns the ones that changed. The open ones are
    read a page at a time, then each gets its state."""
    state = PREFECT_STATE[status]
    changed: list[str] = []
    if not flow_run_ids:
        return changed
    from prefect.client.schemas.filters import FlowRunFilterId
    from prefect.client.schemas.objects import State, StateType

    ids = list(dict.fromkeys(flow_run_ids))
    with client() as prefect_client:
        for start in range(0, len(ids), PAGE):
            wanted = FlowRunFilterId(any_=[UUID(i) for i in ids[start:start + PAGE]])
            for flow_run in _open_flow_runs(prefect_client, id=wanted):
                prefect_client.set_flow_run_state(flow_run.id, State(type=StateType(state), message=message),
                                                  force=True)
                changed.append(str(flow_run.id))
    return changed


def open_subflow_runs(flow_run_ids: list[str]) -> list[str]:
    """The subflow runs still open under ``flow_run_ids``, at any depth: a human task's own flow
    run, a workstream's, a sub-process run's. One the dead process made but had no time to record
    (its task, its child run) is found here only."""
    found: list[str] = []
    parents = list(flow_run_ids)
    if not parents:
        return found
    with client() as prefect_client:
        from prefect.client.schemas.filters import FlowRunFilterParentFlowRunId

        while parents:
            rows = _open_flow_runs(prefect_client,
                                   parent_flow_run_id=FlowRunFilterParentFlowRunId(any_=[UUID(p) for p in parents]))
            parents = [str(r.id) for r in rows if str(r.id) not in found]
            found += parents
    return found


def mark_crashed(flow_run_ids: list[str], message: str) -> None:
    """Move flow runs a dead process left ``Pending``, ``Running`` or ``Paused``, and their open
    subflow runs, to ``Crashed``: Prefect's own resume form would otherwise accept an answer for
    them and leave them ``Running`` with nothing executing them."""
    end_flow_runs(list(dict.fromkeys(flow_run_ids + open_subflow_runs(flow_run_ids))), "crashed", message)
