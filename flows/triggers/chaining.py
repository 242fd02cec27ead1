"""On-complete chaining: when a run of A completes, start every definition waiting for A.

The finishing run's own process dispatches (:func:`dispatch`, called by the flow body right
after the run's end is recorded), so chains work under ``ergon run``, ``ergon serve`` and a
Prefect worker alike — nothing has to be listening. For each ``on_complete`` trigger naming A
(enabled, not paused), when the run ended ``completed`` and its outcome (the final node) is in
``outcomes`` (if given), the waiting definition is started in the background with
:func:`flows.runs.start_detached`: inputs = the trigger's ``input``, then each ``map`` field
rendered from A's final context with the compiler's sandboxed Jinja renderer (a single
``{{ expr }}`` keeps its type), trigger ``on_complete``, ``started_by`` = the trigger's
``as_user``.

**Loop guard.** A chain can cycle (A → B → A). Each chained run is started with its depth in
the chain (``ERGON_CHAIN_DEPTH`` in its process environment, one more than the run that started
it; a run started any other way is depth 0). A run at depth ``ERGON_CHAIN_MAX_DEPTH`` (default
5) starts nothing more and says so in its log. So a cycle runs at most that many extra runs, and
a legitimate pipeline of chained definitions up to 5 long works unchanged.

A chained start that is refused (inputs that do not fit the waiting definition, a template that
fails) is logged and skipped: the finished run has already completed and stays so.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

from flows.trigger_refs import TriggerRef, all_refs

CHAIN_DEPTH_ENV = "ERGON_CHAIN_DEPTH"
CHAIN_MAX_ENV = "ERGON_CHAIN_MAX_DEPTH"
DEFAULT_MAX_DEPTH = 5
log = logging.getLogger("ergon.triggers")


def chain_depth() -> int:
    """How many on-complete hops led to the run executing in this process."""
    try:
        return max(int(os.environ.get(CHAIN_DEPTH_ENV, "0")), 0)
    except ValueError:
        return 0


def max_depth() -> int:
    try:
        return int(os.environ.get(CHAIN_MAX_ENV, DEFAULT_MAX_DEPTH))
    except ValueError:
        return DEFAULT_MAX_DEPTH


def waiting_on(catalog: Any, definition: str) -> list[TriggerRef]:
    """Enabled, unpaused on-complete triggers of the folder that wait for ``definition``."""
    from flows.store import triggers as trigger_store

    refs = [r for r in all_refs(catalog)
            if r.kind == "on_complete" and r.trigger.definition == definition and r.trigger.enabled]
    if not refs:
        return []
    paused = {(s.definition_name, s.trigger_index) for s in trigger_store.list_trigger_states() if s.paused}
    return [r for r in refs if (r.definition, r.index) not in paused]


def chained_inputs(ref: TriggerRef, context: dict[str, Any]) -> dict[str, Any]:
    """The waiting run's inputs: the trigger's ``input``, then its ``map`` rendered over ``context``."""
    from compiler.templates import render_value

    inputs = dict(ref.trigger.input)
    for field, template in ref.trigger.map.items():
        inputs[field] = render_value(template, context)
    return inputs


def dispatch(*, definition: str, run_id: str, status: str, outcome: str | None, context: dict[str, Any],
             catalog: Any) -> list[str]:
    """Start what waits for this finished run; returns the started run ids (never raises)."""
    if status != "completed" or catalog is None:
        return []
    try:
        refs = [r for r in waiting_on(catalog, definition)
                if not r.trigger.outcomes or outcome in r.trigger.outcomes]
    except Exception as exc:  # the run is over; a broken folder must not turn it into a failure
        _warn(f"on_complete: could not read the triggers waiting for {definition}: {exc}")
        return []
    if not refs:
        return []
    depth = chain_depth()
    if depth >= max_depth():
        _warn(f"on_complete: run {run_id} is {depth} chained starts deep ({CHAIN_MAX_ENV}={max_depth()}); "
              f"not starting {', '.join(r.definition for r in refs)}")
        return []
    started = []
    for ref in refs:
        try:
            started.append(_start(ref, context, depth, run_id))
        except Exception as exc:
            _warn(f"on_complete {ref.name}: not started after run {run_id}: {exc}")
    return started


def _start(ref: TriggerRef, context: dict[str, Any], depth: int, source_run_id: str) -> str:
    from flows.runs import start_background
    from flows.store import triggers as trigger_store
    from flows.store.models import utcnow

    inputs = chained_inputs(ref, context)
    started = start_background(ref.definition, inputs, started_by=ref.acting_user, trigger="on_complete",
                               env={CHAIN_DEPTH_ENV: str(depth + 1)})
    run_id = started.run_id
    trigger_store.upsert_trigger_state(ref.definition, ref.index, kind=ref.kind, last_run_id=run_id, last_run_at=utcnow(),
                                       created_by=ref.trigger.as_user)
    log.info("on_complete %s: started run %s after run %s %s", ref.name, run_id, source_run_id, started.where)
    return run_id


def _warn(message: str) -> None:
    log.warning(message)
    print(f"warning: {message}", file=sys.stderr)


def on_run_ended(definition: str, result: Any, catalog: Any) -> list[str]:
    """The ``run.ended`` moment (:mod:`flows.moments`): :func:`dispatch` for the run's result."""
    return dispatch(definition=definition, run_id=result.run_id, status=result.status, outcome=result.outcome,
                    context=result.context, catalog=catalog)
