"""Retrying a failed scheduled run, per its trigger's ``retry`` policy; the schedule stays on.

Decision: **re-enter the flow body, inside the same Prefect flow run**, rather than Prefect's
flow-level retries or a new submission. Prefect's flow retries wait a fixed delay (no
exponential backoff) and are a property of the flow object, shared by every schedule of the
deployment; a re-submission would make a second Ergon run. Re-entering keeps one flow run and one
Ergon run: each attempt opens the run by its Prefect flow-run id and the engine continues after
the last completed visit — completed visits (and their LLM calls) are not repeated, the failed
node runs again. Delays are the node retry formula: ``delay_seconds * backoff**i``, capped at
``max_delay_seconds``, with ``jitter`` as a random fraction. A trigger without ``retry`` is not
retried. A run refused for invalid input is never retried (it would fail the same way).

The schedule itself is never touched: Prefect keeps creating runs whatever this one's state, so a
failure (retried or not) leaves it enabled.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from typing import Any

from flows.runtime.attempts import retry_delays
from flows.trigger_refs import TriggerRef

#: The jitter's own generator, not :mod:`random`'s shared one (see :mod:`flows.runtime.attempts`).
_RANDOM = random.Random()


def around_run(plan: Any, request: Any, prefect_id: str | None,
               execute_once: Callable[[], Awaitable[Any]]) -> Awaitable[Any] | None:
    """The ``run.around`` moment (:mod:`flows.moments`): a run a schedule started (not a sub-run)
    is executed by :func:`run_scheduled`; any other is left to the flow body."""
    if request.trigger == "schedule" and request.parent_run_id is None:
        return run_scheduled(plan, request, prefect_id, execute_once)
    return None


def backoff_delays(policy: Any) -> list[float]:
    """One delay per retry: a node's delays (:func:`flows.runtime.attempts.retry_delays`), each
    moved by up to ``jitter`` of itself either way."""
    if policy is None:
        return []
    return [max(delay * (1 + _RANDOM.uniform(-policy.jitter, policy.jitter)), 0.0) for delay in retry_delays(policy)]


async def run_scheduled(plan: Any, request: Any, prefect_id: str | None,
                        execute_once: Callable[[], Awaitable[Any]]) -> Any:
    """Run a schedule-started flow body: act for the trigger, record it, retry on failure.

    ``request`` is the run's :class:`~flows.execution.request.RunRequest` (its ``schedule_slug`` names
    the schedule), ``prefect_id`` the flow run, ``execute_once`` one execution of the body."""
    from flows.store import runs as run_store
    from flows.triggers.origin import scheduled_trigger

    ref = scheduled_trigger(plan, request.schedule_slug)
    if ref is not None:
        request.started_by = ref.acting_user
        request.trigger = "schedule"
        # input fields that are not flow parameters (context.initial ones) cannot ride on the
        # Prefect schedule; they reach the run's context here
        accepted = set(plan.input_schema.get("properties", {}))
        request.overrides = {**{k: v for k, v in ref.trigger.input.items() if k not in accepted}, **request.overrides}
        _note_start(ref, prefect_id, request)
    delays = backoff_delays(ref.trigger.retry if ref is not None else None)
    for attempt in range(len(delays) + 1):
        try:
            result = await execute_once()
        except Exception:
            if attempt >= len(delays):
                raise
            result = None
        run = run_store.get_run_by_prefect_id(prefect_id) if prefect_id else None
        if run is None or run.status != "failed" or attempt >= len(delays) or (run.error or "").startswith("invalid input"):
            return result
        await asyncio.sleep(delays[attempt])
    return result  # pragma: no cover - the loop always returns


def _note_start(ref: TriggerRef, prefect_id: str | None, request: Any) -> None:
    """Pin the run's id before it starts, so the trigger's state names its last run at once."""
    from flows.store import runs as run_store
    from flows.store import triggers as trigger_store
    from flows.store.models import new_id, utcnow

    existing = run_store.get_run_by_prefect_id(prefect_id) if prefect_id else None
    if existing is not None:  # Prefect re-ran the same flow run: the run continues under its id
        run_id = existing.id
    else:
        run_id = request.run_id = request.run_id or new_id()
    trigger_store.upsert_trigger_state(ref.definition, ref.index, kind=ref.kind, last_run_id=run_id, last_run_at=utcnow(),
                                       created_by=ref.trigger.as_user)
