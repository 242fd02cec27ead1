"""Ergon's logs where a Prefect user looks: the flow run's logs (the log tab of Prefect's UI,
``prefect flow-run logs``, the API) and the console of the process running the flow (a worker's).

Everything goes through Prefect's own logging, nothing through hand-written HTTP:

* **Ergon's loggers** — all under ``ergon``: ``ergon.nodes`` (below), ``ergon.tools`` (the
  ``log`` tool, tool calls), ``ergon.workstreams``, ``ergon.triggers``, ``ergon.humans``, … —
  get Prefect's API log handler (:class:`RunLogHandler`, an ``APILogHandler``). A record logged
  inside a flow or task run goes to that flow run's logs, tied to the task run when one is
  current (the node visit that logged it), at its own level; Prefect's ``APILogWorker`` sends
  the records in batches from a background thread (one request per batch, not per line). This
  is what ``PREFECT_LOGGING_EXTRA_LOGGERS=ergon`` does, except that a record logged outside any
  run (a CLI command, the dashboard) is dropped here, where Prefect's handler warns for each;
  when a user lists ``ergon`` there anyway, Prefect's handler is kept and none is added. Unless
  the user set a level on ``ergon``, it gets the level of Prefect's run loggers
  (``PREFECT_LOGGING_LEVEL``, INFO by default): a ``log`` tool call at ``debug`` shows when
  Prefect's own debug lines do. Records also reach the process's console through the root
  logger, at Prefect's console level (``PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL``).
* **Node events** — :func:`run_listener` wraps the engine's listener of a run (the CLI's
  progress printer, or none) and logs each event on ``ergon.nodes``: a node's start and end
  (duration, next node) at INFO, a fan-out's start with its item count, a failed attempt that
  Prefect retries and the retry at WARNING, a node that failed at ERROR, a run waiting for a
  person at INFO (``waits for a person: <title> (task <id>)``). A fan-out item's ``progress``
  event is no log line: :mod:`flows.prefect.progress` shows the counts as the progress
  artifact of a ``task_runs: node`` fan-out's task run. They land in the same place as
  a ``get_run_logger()`` line — the flow run's logs, on the task run of the visit — but on an
  Ergon logger: one ``ergon`` rule covers them with the rest (``ergon.nodes`` at WARNING keeps
  only retries and failures), and they take :class:`RunLogHandler`'s cheaper path (below).
* **Waiting is not an error** — Prefect's engines log every final state that is not
  ``Completed`` at ERROR, so a run suspended for a person's answer showed
  ``ERROR | Task run 'review' - Finished in state Running()`` and ``ERROR | Flow run … -
  Finished in state Suspended(type=PAUSED)``. :class:`WaitingIsNotAnError`, a filter on
  Prefect's ``prefect.flow_runs`` and ``prefect.task_runs`` loggers, makes exactly those
  records INFO: a flow or task run that finished ``Paused`` or ``Suspended``, and a task run
  that finished ``Running`` in a flow run this process saw start waiting for a person. Every
  other record keeps its level.

Cost: two node lines a visit. Prefect's ``APILogHandler.prepare`` validates each record through
its ``LogCreate`` pydantic model and reads its settings through the legacy accessors, 136 µs a
record measured here (2 vCPU); :meth:`RunLogHandler.prepare` builds the same ``LogCreate``
payload directly, 60 µs. Sending stays Prefect's: batched, off the run's thread.

:func:`install` sets up the handler and the filter, once per process, before a flow runs:
:func:`flows.prefect.build.run_body` calls it (``ergon run``, ``ergon serve``'s runs, a
sub-process), and so does :mod:`flows.prefect.deployments` when a worker's flow-run process
imports it. The engine stays Prefect-free: it only calls its listener.
"""

from __future__ import annotations

import logging
import re
import sys
from datetime import datetime, timezone
from typing import Any

from prefect.context import FlowRunContext, TaskRunContext, get_settings_context
from prefect.logging.handlers import APILogHandler

from flows.prefect import progress
from flows.runtime.effects import Listener

#: The namespace of every Ergon logger.
ERGON = "ergon"
#: Where node events are logged.
NODES = logging.getLogger("ergon.nodes")
#: Prefect's run loggers (what ``get_run_logger`` returns loggers of).
RUN_LOGGERS = ("prefect.flow_runs", "prefect.task_runs")
#: Flow runs (ids) this process saw start waiting for a person and not go on since.
_WAITING: set[str] = set()
_WAITING_MAX = 1024


def _run_ids(record: logging.LogRecord) -> tuple[Any, Any] | None:
    """(flow run id, task run id) a record belongs to: its own, else the current run's; None
    outside any run."""
    flow_run_id = getattr(record, "flow_run_id", None)
    if flow_run_id is not None:
        return flow_run_id, getattr(record, "task_run_id", None)
    task_ctx = TaskRunContext.get()
    if task_ctx is not None:
        return task_ctx.task_run.flow_run_id, task_ctx.task_run.id
    flow_ctx = FlowRunContext.get()
    if flow_ctx is not None and flow_ctx.flow_run is not None:
        return flow_ctx.flow_run.id, None
    return None


class RunLogHandler(APILogHandler):
    """Prefect's API log handler for Ergon's loggers: a record logged inside a flow or task run
    goes to its logs; one logged outside any run is not sent (Prefect's handler would warn).

    Prefect's ``emit`` (its ``logging.to_api.enabled`` switch, a record's ``send_to_api=False``)
    and its batching ``APILogWorker`` are kept; only :meth:`prepare` is cheaper (see the module
    docstring)."""

    def emit(self, record: logging.LogRecord) -> None:
        if _run_ids(record) is None:
            return
        super().emit(record)

    def prepare(self, record: logging.LogRecord) -> dict[str, Any]:
        """The record as Prefect's ``LogCreate`` payload, in JSON types (what its ``prepare``
        gives), a message over ``logging.to_api.max_log_size`` truncated as Prefect does."""
        ids = _run_ids(record)
        if ids is None:  # emit sends only records of a run
            raise ValueError(f"log record of {record.name!r} outside any flow or task run")
        message = self.format(record)
        limit = get_settings_context().settings.logging.to_api.max_log_size
        if len(message) * 4 + 400 > limit:  # a UTF-8 character is at most 4 bytes
            encoded = message.encode()
            if len(encoded) + 400 > limit:
                message = encoded[: max(limit - 450, 0)].decode(errors="ignore") + "... [truncated]"
        return {
            "name": record.name,
            "level": record.levelno,
            "message": message,
            "timestamp": datetime.fromtimestamp(record.created, timezone.utc).isoformat(),
            "flow_run_id": str(ids[0]) if ids[0] is not None else None,
            "task_run_id": str(ids[1]) if ids[1] is not None else None,
        }


_FINISHED = re.compile(r"Finished in state (?:(?P<paused>Paused|Suspended)|Running)\(")


class WaitingIsNotAnError(logging.Filter):
    """A run that waits for a person is logged as waiting (INFO), not as an error (see the module
    docstring); every other record passes unchanged."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.ERROR or not isinstance(record.msg, str):
            return True
        found = _FINISHED.match(record.msg)
        if found is None:
            return True
        if found.group("paused") is None and str(getattr(record, "flow_run_id", None)) not in _WAITING:
            return True  # a task run left Running for another reason: Prefect's level stands
        record.levelno, record.levelname = logging.INFO, logging.getLevelName(logging.INFO)
        return logging.getLogger(record.name).isEnabledFor(logging.INFO)


def install() -> None:
    """Ergon's loggers to the run's logs, and waiting logged as waiting, in this process
    (idempotent: a few list scans, called before every run)."""
    ergon = logging.getLogger(ERGON)
    if ergon.level == logging.NOTSET:
        ergon.setLevel(logging.getLogger(RUN_LOGGERS[0]).getEffectiveLevel())
    if not any(isinstance(handler, APILogHandler) for handler in ergon.handlers):
        ergon.addHandler(RunLogHandler())
    for name in RUN_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, WaitingIsNotAnError) for f in logger.filters):
            logger.addFilter(WaitingIsNotAnError())


def run_listener(inner: Listener) -> Listener:
    """``inner`` (the run's own listener), with every event also written to the run's logs."""
    if getattr(inner, "logs_to_prefect", False):
        return inner

    def listen(event: str, node: str, detail: dict[str, Any]) -> None:
        if event == "progress":  # one per fan-out item: Prefect shows it as a progress artifact
            progress.publish(node, detail)
            inner(event, node, detail)
            return
        try:
            log_event(event, node, detail)
        except Exception:  # noqa: BLE001 - a log line never fails a run
            pass
        inner(event, node, detail)

    listen.logs_to_prefect = True  # type: ignore[attr-defined]
    return listen


def log_event(event: str, node: str, detail: dict[str, Any]) -> None:
    """One engine event as a line of the current run's log (nothing outside a run)."""
    task_ctx = TaskRunContext.get()
    if task_ctx is None and FlowRunContext.get() is None:
        return
    _track_waiting(event, task_ctx)
    attempt = task_ctx.task_run.run_count if task_ctx is not None else None
    attempts = task_ctx.task.retries + 1 if task_ctx is not None else None
    retried = False
    if event == "failed":
        from flows.prefect.executor import retried_after

        # the engine tells a failed visit while it handles the exception: the exception that
        # ends the task run, which Prefect's retry decision looks at next
        exc = sys.exc_info()[1]
        retried = exc is not None and retried_after(exc)
    level, message = describe(event, node, detail, attempt=attempt, attempts=attempts, retried=retried)
    if NODES.isEnabledFor(level):
        NODES.log(level, message)


def describe(event: str, node: str, detail: dict[str, Any], *, attempt: int | None = None,
             attempts: int | None = None, retried: bool = False) -> tuple[int, str]:
    """The level and text of one engine event (``attempt``: the visit's attempt, when the event
    does not say; ``attempts``: how many the node's retry policy allows, when known;
    ``retried``: a failed attempt that Prefect runs again)."""
    name = f"Node {node!r}"
    attempt = detail.get("attempt") or attempt or 1
    of = f" of {attempts}" if attempts else ""
    if event == "started":
        if detail.get("items") is not None:
            return logging.INFO, f"{name} started: {detail['items']} items"
        if attempt > 1:
            return logging.WARNING, f"{name} retried: attempt {attempt}{of}"
        return logging.INFO, f"{name} started"
    if event == "completed":
        if detail.get("final"):
            return logging.INFO, f"{name} reached: the run ends here"
        took = f" in {detail['ms']} ms" if detail.get("ms") is not None else ""
        after = f" → {detail['next']!r}" if detail.get("next") else ""
        return logging.INFO, f"{name} completed{took}{after}"
    if event == "failed":
        error = detail.get("error", "")
        if retried:
            return logging.WARNING, f"{name} attempt {attempt}{of} failed, it is retried: {error}"
        if attempt > 1:
            return logging.ERROR, f"{name} failed on attempt {attempt}{of}: {error}"
        return logging.ERROR, f"{name} failed: {error}"
    if event == "paused":
        if detail.get("task_id"):
            return logging.INFO, f"{name} waits for a person: {detail.get('title', '')} (task {detail['task_id']})"
        return logging.INFO, f"{name} is suspended until a person answers: the run goes on in a new process then"
    if event == "answered":
        return logging.INFO, f"{name}: task {detail.get('task_id')} was answered while the run was stopped; that answer is used"
    if event == "refused":
        return logging.WARNING, f"{name}: an answer given through Prefect was refused ({detail.get('reason', '')}); it waits again"
    if event == "skipped":
        after = f" → {detail['next']!r}" if detail.get("next") else ""
        return logging.INFO, f"{name} skipped{after}"
    if event == "cancelled":
        return logging.WARNING, f"{name} cancelled: {detail.get('error', '')}"
    return logging.INFO, f"{name} {event}"


def _track_waiting(event: str, task_ctx: Any) -> None:
    """Remember the current flow run as waiting for a person (for :class:`WaitingIsNotAnError`)
    from its ``paused`` event until its next node event."""
    if event in ("answered", "refused"):
        return
    if task_ctx is not None:
        flow_run_id = task_ctx.task_run.flow_run_id
    else:
        flow_ctx = FlowRunContext.get()
        flow_run_id = flow_ctx.flow_run.id if flow_ctx is not None and flow_ctx.flow_run is not None else None
    if flow_run_id is None:
        return
    if event == "paused":
        if len(_WAITING) >= _WAITING_MAX:
            _WAITING.clear()
        _WAITING.add(str(flow_run_id))
    else:
        _WAITING.discard(str(flow_run_id))
