"""Starting a run as a flow run of its definition's deployment, for a worker of its pool to run.

A start that is not a terminal's ``ergon run`` — the dashboard, a webhook, a chain, a
submission trigger, ``ergon schedules run-now``, a replay, a resume — goes through the
definition's deployment when the configured Prefect has one for the content being started
(:func:`deployment_for`): the run owner records the Ergon run first, then :func:`start_flow_run`
creates a flow run of that deployment named after the run (as ``ergon run`` names its own flow
runs) and tagged :data:`RUN_TAG`. A worker of the deployment's pool picks it up — with the pool's
and the deployment's concurrency limits — and the deployment's flow body takes up that very
run (:mod:`flows.prefect.deployments`). Nothing runs on the host that received the request.

"For the content being started" is strict: a deployment is used only when its entrypoint runs
the same version (the folder's draft, ``latest``, or published version N) and its ``version``
(the definition's content hash at deploy time) equals the content the starter compiled. A
definition changed since ``ergon deploy`` runs where it is started, and the starter says why.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from uuid import UUID

from flows.trigger_schedules import full_deployment_name

#: The tag of a flow run Ergon created for a run it recorded first (its name is the run's id).
RUN_TAG = "ergon:run"


@dataclass(frozen=True)
class Deployed:
    """A deployment that runs a definition, as a start names it."""

    id: str
    name: str  # "flow/deployment", as `prefect deployment run` takes it
    work_pool: str | None


@dataclass(frozen=True)
class NotDeployed:
    """Why a start does not go through a deployment (for the starter to say)."""

    reason: str


def deployment_for(definition: str, version: int | None, content_version: str) -> Deployed | NotDeployed:
    """The deployment of ``definition`` that runs ``version`` (None: the folder's draft) with the
    content ``content_version`` (the compiled Plan's version), or why there is none."""
    from prefect.exceptions import ObjectNotFound

    from flows.prefect.api import client
    from flows.prefect.deployments import entrypoint

    name = full_deployment_name(definition)
    with client() as prefect_client:  # an API that does not answer is a PrefectApiError, said in one line
        try:
            deployment = prefect_client.read_deployment_by_name(name)
        except ObjectNotFound:
            return NotDeployed(f"`{definition}` has no deployment")
    wanted = entrypoint(definition, version)
    if deployment.entrypoint != wanted:
        which = "the draft" if version is None else f"version {version}"
        return NotDeployed(f"deployment {name} runs {deployment.entrypoint}, not {which} ({wanted})")
    if deployment.version != content_version:
        return NotDeployed(f"deployment {name} was made from other content ({deployment.version}, "
                           f"starting {content_version}): run `ergon deploy {definition}`")
    return Deployed(str(deployment.id), name, deployment.work_pool_name)


def work_pool_of(definition: str) -> str | None:
    """The work pool of ``definition``'s deployment (``ergon deploy`` made it), None when it has
    none or none with a pool (``ergon serve``'s own deployments have none)."""
    from prefect.client.orchestration import get_client
    from prefect.exceptions import ObjectNotFound

    with get_client(sync_client=True) as client:
        try:
            return client.read_deployment_by_name(full_deployment_name(definition)).work_pool_name
        except ObjectNotFound:
            return None


def start_flow_run(deployed: Deployed, *, run_id: str, parameters: dict[str, Any], tags: list[str],
                   env: dict[str, str] | None = None) -> str:
    """Create the flow run of ``deployed`` that executes Ergon run ``run_id``; its id. ``env``
    goes to the flow run's process as the work pool's ``env`` job variable (a chain's depth)."""
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        flow_run = client.create_flow_run_from_deployment(
            UUID(deployed.id), parameters=parameters, name=run_id, tags=[RUN_TAG, *tags],
            job_variables={"env": dict(env)} if env else None)
    return str(flow_run.id)


def ergon_run_of_current_flow_run() -> str | None:
    """In a deployment's flow body: the Ergon run this flow run was created for, if Ergon made it."""
    from prefect.runtime import flow_run

    return str(flow_run.name) if RUN_TAG in (flow_run.tags or []) else None


#: Flow-run states in which a worker's process is (or was about to be) executing the flow run.
_STARTED = ("PENDING", "RUNNING")


def lost_runs(flow_runs: dict[str, str], *, take_up_seconds: float) -> dict[str, str]:
    """Of the pending Ergon runs handed to a deployment (run id → its flow run's id), those no
    flow body will take up, with why: the flow run ended first (its process crashed as it
    started, a server restart refused its first call, it was cancelled), or it has been starting
    or running for longer than ``take_up_seconds`` without taking the run up (its worker or its
    process was killed). Flow runs still waiting for a worker (scheduled, late) are not lost."""
    from datetime import datetime, timezone

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    if not flow_runs:
        return {}
    with get_client(sync_client=True) as client:
        found = {str(fr.id): fr for fr in client.read_flow_runs(
            flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[UUID(i) for i in flow_runs.values()])),
            limit=len(flow_runs))}
    now = datetime.now(timezone.utc)
    lost = {}
    for run_id, flow_run_id in flow_runs.items():
        flow_run = found.get(flow_run_id)
        state = flow_run.state if flow_run is not None else None
        if flow_run is None:
            lost[run_id] = f"its flow run {flow_run_id} is gone from Prefect"
        elif state is not None and state.is_final():
            lost[run_id] = f"its flow run {flow_run_id} ended {state.name} before a flow body took the run up"
        elif state is not None and state.type.value in _STARTED and state.timestamp is not None:
            age = (now - state.timestamp).total_seconds()
            if age > take_up_seconds:
                lost[run_id] = (f"its flow run {flow_run_id} has been {state.name} for {age:.0f} s and no flow body "
                                "took the run up (its worker or process stopped)")
    return lost
