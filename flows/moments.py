"""Moments of a run's life that other parts of Ergon act on: one table of hooks.

The module where a moment happens announces it (:func:`announce`, or :func:`call` for the
moments of one execution); what acts on it is named in :data:`HOOKS`, as ``module:function``, and
imported the first time the moment comes in a process — the way the CLI names its commands. So
the announcer imports nothing of what reacts, and the packages import downwards only
(``tests/test_layering.py``): the store announces a run's new status without knowing that Prefect
events are sent for it, a submission announces its change without importing the triggers that
start runs on it, and the flow body (:mod:`flows.execution.body`) runs without importing the
triggers, submissions or the run owner that act around it.

Moments announced (a hook that raises is logged and skipped: what reacts never undoes the moment):

* ``run.status`` — ``(run, previous)``: a run's status changed, whoever changed it (the run's
  own process, crash detection, a cancel); ``run`` is the row as committed.
* ``task.created`` / ``task.answered`` / ``task.expired`` — ``(task)``: a human task was
  created, got its valid answer, or expired unanswered (the row as committed).
* ``submission.changed`` — ``(event, submission_id, who)``: a submission was created or
  changed (``event`` is ``created`` or ``updated``); the triggers' hook returns the ids of the
  runs it started.
* ``budget.exceeded`` — ``(run_id, node_id, reason)``: a run or node budget stopped a node.

Moments of one execution, called by the flow body in this order (:func:`call`: a hook's error is
the run's, as if the body did it itself):

* ``run.around`` — ``(plan, request, flow_run_id, once)``: a hook that takes the execution over
  returns the awaitable that runs it (``once()`` one or more times); None leaves it to the body.
  A schedule's run acts for its trigger and is retried by its policy this way.
* ``run.opened`` — ``(plan, run_id, context)``: the run's record is open; a template run returns
  its submissions (given to the nodes), others None.
* ``run.supervisor`` — ``(plan, run_id, run_type, environments)``: the supervisor of a supervised
  run, else None.
* ``run.ending`` — ``(template, context, outcome)``: the engine ended ``outcome`` (a completed
  template run's output is produced here); the reason the run fails instead, or None.
* ``run.recorded`` — ``(run)``: the run's end is in the store (every end, crashes included).
* ``run.ended`` — ``(definition, result, catalog)``: the run returned from the body with
  ``result``, its :class:`~flows.runtime.effects.RunResult` (``on_complete`` chains start here;
  that hook never raises).

:func:`on` adds a hook in one process (tests).
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

log = logging.getLogger("ergon.moments")

#: moment → the hooks that act on it, as ``module:function`` (imported on first use).
HOOKS: dict[str, tuple[str, ...]] = {
    "run.status": ("flows.prefect.events:on_run_status",),
    "task.created": ("flows.prefect.events:on_task_created", "flows.email.asking:on_task_created"),
    "task.answered": ("flows.prefect.events:on_task_answered",),
    "task.expired": ("flows.prefect.events:on_task_expired",),
    "submission.changed": ("flows.triggers.submissions:on_submission_changed",
                           "flows.prefect.events:on_submission_changed"),
    "budget.exceeded": ("flows.prefect.events:on_budget_exceeded",),
    "run.around": ("flows.triggers.retries:around_run",),
    "run.opened": ("flows.submissions.template_runs:on_run_opened",),
    "run.supervisor": ("flows.runtime.llm_supervisor:for_run",),
    "run.ending": ("flows.submissions.outputs:on_run_ending",),
    "run.recorded": ("flows.runs.answers:on_run_recorded",),
    "run.ended": ("flows.triggers.chaining:on_run_ended",),
}

_loaded: dict[str, list[Callable[..., Any]]] = {}


def _hooks(moment: str) -> list[Callable[..., Any]]:
    if moment not in _loaded:
        found = []
        for target in HOOKS[moment]:
            module, _, attribute = target.partition(":")
            found.append(getattr(importlib.import_module(module), attribute))
        _loaded[moment] = found
    return _loaded[moment]


def on(moment: str, hook: Callable[..., Any]) -> Callable[[], None]:
    """Add ``hook`` to ``moment`` in this process; returns the function that removes it."""
    hooks = _hooks(moment)
    hooks.append(hook)
    return lambda: hooks.remove(hook) if hook in hooks else None


#: True where announced moments reach no hook (:func:`unannounced`).
_UNANNOUNCED: ContextVar[bool] = ContextVar("ergon_unannounced", default=False)


@contextmanager
def unannounced() -> Iterator[None]:
    """Within this context (and the tasks and threads it starts), :func:`announce` calls no hook:
    the runs of ``ergon test`` (:mod:`flows.testing`) send no Prefect event an automation could
    act on and start no trigger. The moments of one execution (:func:`call`) still run: they are
    part of the run; only what acts around it (``run.around``, ``run.ended``) does not, also on
    the real Prefect flow (:func:`flows.execution.body.execute`)."""
    token = _UNANNOUNCED.set(True)
    try:
        yield
    finally:
        _UNANNOUNCED.reset(token)


def silenced() -> bool:
    """Whether this context is within :func:`unannounced` (the run of a test case)."""
    return _UNANNOUNCED.get()


def announce(moment: str, *args: Any) -> list[Any]:
    """Call every hook of ``moment`` with ``args``; returns what they returned (None for one that
    failed: it is logged, not raised). None is called within :func:`unannounced`."""
    if _UNANNOUNCED.get():
        return []
    try:
        hooks = _hooks(moment)
    except Exception:  # noqa: BLE001 - a hook that cannot even load must not stop the moment
        log.exception("the hooks of %s could not be loaded", moment)
        return []
    results = []
    for hook in list(hooks):
        try:
            results.append(hook(*args))
        except Exception:  # noqa: BLE001 - see the module docstring
            log.exception("%s hook %s failed", moment, getattr(hook, "__qualname__", hook))
            results.append(None)
    return results


def call(moment: str, *args: Any) -> list[Any]:
    """Call every hook of ``moment`` with ``args``; what they returned. Unlike :func:`announce`,
    an error is raised to the caller: these hooks are part of the execution that calls them."""
    return [hook(*args) for hook in list(_hooks(moment))]


def first(moment: str, *args: Any) -> Any:
    """What the first hook of ``moment`` that returns something returned (None when none did);
    the hooks after it are not called."""
    for hook in list(_hooks(moment)):
        found = hook(*args)
        if found is not None:
            return found
    return None
