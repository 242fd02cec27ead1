"""Submission triggers: when a submission of form F is created or updated, start what waits for F.

:func:`dispatch` is called by :mod:`flows.submissions.records` in the process that made the
change, right after it is written (``ergon submissions create|set``, the dashboard, a template
run writing back to a submission) — nothing has to be listening, as with on-complete chains
(:mod:`.chaining`). A ``create`` fires ``on_submission_created``, a ``set_values`` call fires
``on_submission_updated`` once, however many values it changed. Submissions a run records as a
template's input or a step's output (written in the run's own transactions, not through
:mod:`~flows.submissions.records`' ``create``) fire nothing.

For each trigger of that kind naming the submission's form (enabled, not paused with ``ergon
schedules pause``), when its ``filter`` (JSON Logic over the submission's data as it is now,
``{"var": "group.field"}``, evaluated by :func:`compiler.guards.evaluate`, the guards' engine) is
absent or holds, its definition is started in the background with
:func:`flows.runs.start_detached`, acting for the trigger's ``as_user``, trigger
``on_submission_created`` / ``on_submission_updated``:

* a template reads the submission as its input (``submission_id``; the run's
  ``input_submission_id``);
* a process, pipeline or workflow gets the trigger's ``input``, then each ``map`` field rendered
  with the compiler's sandboxed Jinja renderer over ``{submission: data, submission_id: id,
  form: name}`` (a single ``{{ expr }}`` keeps its type).

**Loop guard.** A template run that writes back to a submission of a form some trigger waits for
would start itself again. The runs a submission trigger starts get the chain depth of
:mod:`.chaining` (``ERGON_CHAIN_DEPTH``, one more than the process that made the change); a
change made at depth ``ERGON_CHAIN_MAX_DEPTH`` (default 5) starts nothing and says so.

A start that is refused (inputs that do not fit, a map that does not render, a filter that fails)
is logged and skipped: the change is written already and stays so.
"""

from __future__ import annotations

import logging
import sys
from typing import Any, cast

from flows.store.models import RunTrigger
from flows.submissions.records import SubmissionEvent
from flows.triggers.chaining import CHAIN_DEPTH_ENV, CHAIN_MAX_ENV, chain_depth, max_depth
from flows.trigger_refs import TriggerRef, all_refs

log = logging.getLogger("ergon.triggers")


def kind_of(event: SubmissionEvent) -> RunTrigger:
    """The trigger kind (and the runs' ``trigger``) of a change: ``on_submission_created|updated``."""
    return cast(RunTrigger, f"on_submission_{event}")


def waiting_for(catalog: Any, kind: str, form: str) -> list[TriggerRef]:
    """Enabled, unpaused triggers of ``kind`` of the folder that name ``form``."""
    from flows.store import triggers as trigger_store

    refs = [r for r in all_refs(catalog) if r.kind == kind and r.trigger.form == form and r.trigger.enabled]
    if not refs:
        return []
    paused = {(s.definition_name, s.trigger_index) for s in trigger_store.list_trigger_states() if s.paused}
    return [r for r in refs if (r.definition, r.index) not in paused]


def scope(submission_id: str, form: str, data: dict[str, Any]) -> dict[str, Any]:
    """What a trigger's ``map`` templates see."""
    return {"submission": data, "submission_id": submission_id, "form": form}


def matches(ref: TriggerRef, data: dict[str, Any]) -> bool:
    """Whether the trigger's ``filter`` holds for the submission's data (no filter: always)."""
    from compiler.guards import evaluate

    rule = ref.trigger.filter
    return True if rule is None else evaluate(rule, data)


def mapped_inputs(ref: TriggerRef, submission_id: str, form: str, data: dict[str, Any]) -> dict[str, Any]:
    """A process's inputs: the trigger's ``input``, then its ``map`` rendered over the submission."""
    from compiler.templates import render_value

    inputs = dict(ref.trigger.input)
    seen = scope(submission_id, form, data)
    for field, template in ref.trigger.map.items():
        inputs[field] = render_value(template, seen)
    return inputs


def on_submission_changed(event: SubmissionEvent, submission_id: str, who: str | None) -> list[str]:
    """The ``submission.changed`` hook (:mod:`flows.moments`): :func:`dispatch`."""
    return dispatch(event, submission_id, who)


def dispatch(event: SubmissionEvent, submission_id: str, who: str | None = None, *, catalog: Any = None) -> list[str]:
    """Start what waits for this change of submission ``submission_id``; returns the started run
    ids (never raises)."""
    kind = kind_of(event)
    try:
        from flows.submissions import records

        view = records.view(submission_id)
        form = view.submission.form_name
        if catalog is None:
            from flows.catalog import Catalog

            catalog = Catalog.load()
        refs = waiting_for(catalog, kind, form)
    except Exception as exc:  # the change is written; a broken folder must not turn it into a failure
        _warn(f"{kind}: could not read the triggers waiting for submission {submission_id}: {exc}")
        return []
    if not refs:
        return []
    data = view.data()
    chosen = []
    for ref in refs:
        try:
            if matches(ref, data):
                chosen.append(ref)
        except Exception as exc:
            _warn(f"{kind} {ref.name}: its filter failed on submission {submission_id}: {exc}")
    if not chosen:
        return []
    depth = chain_depth()
    if depth >= max_depth():
        _warn(f"{kind}: submission {submission_id} was changed {depth} chained starts deep "
              f"({CHAIN_MAX_ENV}={max_depth()}); not starting {', '.join(r.definition for r in chosen)}")
        return []
    started = []
    for ref in chosen:
        try:
            started.append(_start(ref, kind, submission_id, form, data, depth, catalog, who))
        except Exception as exc:
            _warn(f"{kind} {ref.name}: not started for submission {submission_id}: {_reason(exc)}")
    return started


def _start(ref: TriggerRef, kind: RunTrigger, submission_id: str, form: str, data: dict[str, Any], depth: int,
           catalog: Any, who: str | None) -> str:
    from flows.runs import start_background
    from flows.store import triggers as trigger_store
    from flows.store.models import utcnow

    env = {CHAIN_DEPTH_ENV: str(depth + 1)}
    unit = catalog.ws.named("template").get(ref.definition)
    if unit is not None:  # a template reads the submission as its input
        started = start_background(ref.definition, {}, started_by=ref.acting_user, trigger=kind,
                                   catalog=catalog, env=env, submission_id=submission_id)
    else:
        started = start_background(ref.definition, mapped_inputs(ref, submission_id, form, data),
                                   started_by=ref.acting_user, trigger=kind, catalog=catalog, env=env)
    run_id = started.run_id
    trigger_store.upsert_trigger_state(ref.definition, ref.index, kind=ref.kind, last_run_id=run_id, last_run_at=utcnow(),
                                       created_by=ref.trigger.as_user)
    log.info("%s %s: started run %s for submission %s (changed by %s) %s", kind, ref.name, run_id, submission_id,
             who or "someone", started.where)
    return run_id


def _reason(exc: Exception) -> str:
    problems = getattr(exc, "problems", None)
    if problems:
        return "; ".join(getattr(p, "message", str(p)) for p in problems)
    return str(exc)


def _warn(message: str) -> None:
    log.warning(message)
    print(f"warning: {message}", file=sys.stderr)
