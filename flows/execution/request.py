"""How a run was asked for: the one object that travels from whoever starts a run to its flow body.

The run owner (:mod:`flows.runs`) builds a :class:`RunRequest` and hands it to the Prefect
adapter, which hands it to the flow's body through the caller's context
(:func:`flows.prefect.build.call_flow`);
a parent run builds one for each sub-process; a run Prefect starts by itself (a deployment, a
schedule, Prefect's UI) has none until its flow body makes one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from flows.runtime.effects import Listener, no_listener
from flows.store.models import RunTrigger


@dataclass
class RunRequest:
    """Who started the run, how, and with what (fields the flow parameters cannot carry)."""

    #: the store's run, when the caller recorded it before the flow started
    run_id: str | None = None
    trigger: RunTrigger = "manual"
    started_by: str | None = None
    parent_run_id: str | None = None
    parent_visit_id: str | None = None
    #: how many sub-process levels are above this run (0: a top-level run)
    depth: int = 0
    #: context values that are not flow parameters (fields with an initial value, child inputs)
    overrides: dict[str, Any] = field(default_factory=dict)
    #: the snapshot the run pins (the caller stored the content it compiled)
    content_hash: str | None = None
    listener: Listener = no_listener
    #: the definitions the run resolves sub-processes, interactions and environments from
    catalog: Any = None
    #: True once the owner validated the inputs against the definition (then the body does not)
    inputs_checked: bool = False
    #: the slug of the Prefect schedule that created the flow run (scheduled runs only)
    schedule_slug: str | None = None
    #: ``supervised``: a supervisor watches the run (None: as the run record or the definition says)
    run_type: str | None = None
    #: the Prefect deployment ("flow/deployment") and work pool whose worker executes the run
    deployment: str | None = None
    work_pool: str | None = None
