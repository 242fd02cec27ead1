"""Cancelling a Prefect flow run from outside it (a paused or suspended run nothing waits in)."""

from __future__ import annotations

from prefect import get_client
from prefect.states import Cancelled

from flows.prefect.server import ensure_api_url


def cancel_flow_run(flow_run_id: str, *, message: str = "cancelled in Ergon") -> None:
    """Move the flow run to Cancelled (forced: a paused/suspended run accepts nothing else), so no
    worker resumes it."""
    ensure_api_url()
    with get_client(sync_client=True) as client:
        client.set_flow_run_state(flow_run_id, Cancelled(message=message), force=True)
