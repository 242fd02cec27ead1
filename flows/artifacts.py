"""Recording a run's artifact: the store's versioned row, then whoever publishes it elsewhere.

:func:`record` is how tools record an artifact (the row is kept by
:func:`flows.store.artifacts.record_artifact`: same key again, next version). The
:data:`on_recorded` callbacks then run with the new row. While a run executes on Prefect, the
Prefect adapter is one of them (:func:`flows.prefect.artifacts.publish`): the artifact is also
published on the run's Prefect flow run and the visit's task run, so a Prefect user finds it in
Prefect's UI. A callback that fails never fails the recording: the store's row is the artifact,
the copies are for reading (the failure is logged).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from flows.store import artifacts as artifact_store
from flows.store.models import Artifact, ArtifactType

log = logging.getLogger("ergon.artifacts")

#: Called with each new artifact row, in registration order (see the module docstring).
on_recorded: list[Callable[[Artifact], None]] = []


def record(run_id: str, key: str, type: ArtifactType, content: Any, *, visit_id: str | None = None,
           description: str | None = None) -> Artifact:
    """Store an artifact of ``run_id`` (a new version when ``key`` exists), then publish it."""
    row = artifact_store.record_artifact(run_id, key, type, content, visit_id=visit_id, description=description)
    for callback in list(on_recorded):
        try:
            callback(row)
        except Exception:  # noqa: BLE001 - a copy elsewhere must not fail the tool that recorded it
            log.warning("publishing artifact %s v%s of run %s failed", key, row.version, run_id, exc_info=True)
    return row
