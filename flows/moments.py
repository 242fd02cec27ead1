"""Moments of a run's life that other parts of Ergon act on: one table of hooks.

The module where a moment happens announces it (:func:`announce`); what acts on it is named in
:data:`HOOKS`, as ``module:function``, and imported the first time the moment is announced in a
process — the way the CLI names its commands. So the announcer imports nothing of what reacts:
the store announces a run's new status without knowing that Prefect events are sent for it, and
a submission announces its change without importing the triggers that start runs on it.

Moments, and what their hooks are called with:

* ``run.status`` — ``(run, previous)``: a run's status changed, whoever changed it (the run's
  own process, crash detection, a cancel); ``run`` is the row as committed.
* ``task.created`` / ``task.answered`` / ``task.expired`` — ``(task)``: a human task was
  created, got its valid answer, or expired unanswered (the row as committed).
* ``submission.changed`` — ``(event, submission_id, who)``: a submission was created or
  changed (``event`` is ``created`` or ``updated``); the triggers' hook returns the ids of the
  runs it started.
* ``budget.exceeded`` — ``(run_id, node_id, reason)``: a run or node budget stopped a node.

A hook that raises is logged and skipped: what reacts to a moment never undoes it.
:func:`on` adds a hook in one process (tests).
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable
from typing import Any

log = logging.getLogger("ergon.moments")

#: moment → the hooks that act on it, as ``module:function`` (imported on first use).
HOOKS: dict[str, tuple[str, ...]] = {
    "run.status": ("flows.prefect.events:on_run_status",),
    "task.created": ("flows.prefect.events:on_task_created",),
    "task.answered": ("flows.prefect.events:on_task_answered",),
    "task.expired": ("flows.prefect.events:on_task_expired",),
    "submission.changed": ("flows.triggers.submissions:on_submission_changed",
                           "flows.prefect.events:on_submission_changed"),
    "budget.exceeded": ("flows.prefect.events:on_budget_exceeded",),
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


def announce(moment: str, *args: Any) -> list[Any]:
    """Call every hook of ``moment`` with ``args``; returns what they returned (None for one that
    failed: it is logged, not raised)."""
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
