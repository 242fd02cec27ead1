"""Answering a human task, as the run owner sees it: a task is answerable only while its run can
take the answer. The CLI (``ergon tasks answer``) and the dashboard's inbox answer through
:func:`answer`; :func:`task_run_state` is what both show next to a task.

A task's run is in one of three states:

* ``waiting`` — a process blocks in Prefect's pause for the answer, or the run is suspended
  under a deployment (no process; Prefect reschedules the flow run when it is resumed). The
  answer is recorded, then handed to the waiting Prefect flow run
  (:func:`flows.prefect.resume.resume_answered`).
* ``resumable`` — the run's process stopped while the run waited (SIGTERM, SIGKILL, a reboot):
  the run is ``crashed``. The answer is recorded — kept on the task — and the run resumed from
  its checkpoint in the background (``ergon runs resume``); the visit that asked is entered again,
  finds its task answered and goes on with that answer
  (:func:`flows.runtime.bodies.human_task.reentered_task`). An answer to another of its tasks
  while it is on its way back is kept the same way; once the visit waits again, Prefect gets it.
* ``over`` — the run ended (completed, failed, cancelled), is gone, or is a sub-process whose
  process stopped (resuming its parent runs the sub-process again, which asks again). Nothing can
  take an answer: the task is closed (``cancelled``, with the reason) and the answer refused.
  Tasks are closed the same way on the spot when their run ends (:func:`close_open_tasks`, called
  by the recorder and the run's life cycle) and when a stopped sub-process run is found.

A run killed while it waits is found by the same crash detection as a run killed while it works
(:func:`flows.store.runs.mark_stale_runs_crashed`: its pid is gone on this host, or its heartbeat
stopped), run here for the task's run before every answer, so an answer never goes to a dead
process. When a run is found stopped, the Prefect flow runs its process left ``Paused`` or
``Running`` are moved to ``Crashed`` (Prefect's own resume form would accept an answer for them
and leave them ``Running`` with nothing executing them), a flow run the process was killed too
soon to record among them, and its tasks forget them (:func:`run_stopped`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Literal

from flows import humans
from flows.errors import ErgonError
from flows.settings import HEARTBEAT_TIMEOUT_SECONDS, logs_dir
from flows.store import runs as run_store
from flows.store import tasks as task_store
from flows.store.errors import TaskConflict
from flows.store.models import RUN_ENDED, TASK_OPEN, HumanTask, Run, TaskChannel, User

log = logging.getLogger("ergon.runs")

RunWait = Literal["waiting", "resumable", "over"]


@dataclass(frozen=True)
class TaskRunState:
    """Whether a task's run can take an answer (``state``), why (``reason``, a sentence), and the run."""

    state: RunWait
    reason: str
    run: Run | None
    #: its dead process was found just now and Prefect was not told yet (see :func:`task_run_state`)
    stopped_now: bool = False


@dataclass
class Answered:
    """A recorded answer and how its run gets it: ``delivered`` is ``prefect`` (the waiting flow
    run was resumed) or ``checkpoint`` (the stopped run resumes from its checkpoint in the
    background); ``message`` says so; ``errors`` are the reasons the run did not get it."""

    task: HumanTask
    delivered: Literal["prefect", "checkpoint"]
    message: str
    errors: list[str] = field(default_factory=list)


def task_run_state(task: HumanTask, *, detect: bool = True, tell_prefect: bool = True) -> TaskRunState:
    """The state of ``task``'s run (see the module docstring). With ``detect``, the run is first
    checked for a dead process (and marked ``crashed`` when it has one; Prefect is told at once
    unless ``tell_prefect`` is False: then :attr:`TaskRunState.stopped_now` says the caller must)."""
    run = run_store.get_run(task.run_id)
    if run is None:
        return TaskRunState("over", f"its run {task.run_id} no longer exists", None)
    stopped_now = False
    if detect and run.status in ("running", "paused"):
        for stopped in run_store.mark_stale_runs_crashed(heartbeat_timeout=HEARTBEAT_TIMEOUT_SECONDS,
                                                         run_ids=[run.id]):
            run_stopped(stopped, prefect=tell_prefect)
            stopped_now = True
        run = run_store.get_run(task.run_id) or run
    state = _state_of(run)
    return TaskRunState(state.state, state.reason, state.run, stopped_now=stopped_now and not tell_prefect)


def _state_of(run: Run) -> TaskRunState:
    """The state of a run whose dead process, if any, was found (see the module docstring)."""
    if run.status in RUN_ENDED:
        return TaskRunState("over", f"its run {run.id} ended {run.status}" + (f" ({run.error})" if run.error else ""),
                            run)
    if run.status == "cancelling":
        return TaskRunState("over", f"its run {run.id} is being cancelled", run)
    if run.status == "crashed":
        if run.parent_run_id:
            return TaskRunState("over", f"its run {run.id} is a sub-process whose process stopped ({run.error}); "
                                        f"resuming run {run.parent_run_id} runs it again, and it asks again", run)
        return TaskRunState("resumable", f"its run {run.id} stopped while it waited ({run.error}); an answer is "
                                         "kept and the run resumes from its checkpoint", run)
    return TaskRunState("waiting", f"its run {run.id} waits for the answer", run)


def close_open_tasks(run_id: str, reason: str, *, actor: str | None = "ergon") -> list[str]:
    """Close the run's open tasks as ``cancelled`` with ``reason`` (nothing can take their
    answers any more); returns their ids."""
    closed = []
    for task in task_store.tasks_for_run(run_id):
        if task.status in TASK_OPEN:
            try:
                task_store.close_task(task.id, "cancelled", actor=actor, reason=reason)
            except TaskConflict:  # answered or closed meanwhile
                continue
            closed.append(task.id)
    return closed


def run_ended(run_id: str, status: str, error: str | None) -> None:
    """A run reached ``completed``, ``failed`` or ``cancelled``: its open tasks close on the spot."""
    if status in RUN_ENDED:
        close_open_tasks(run_id, f"the run ended {status}" + (f": {error}" if error else ""))


def run_stopped(run: Run, *, prefect: bool = True) -> list[str]:
    """``run``'s process stopped (it is ``crashed``): no Prefect flow run waits for its tasks any
    more. Those Prefect flow runs become ``Crashed`` — with the run's own, and any flow run of it
    the process was killed too soon to record (found by name) — best effort, and only with
    ``prefect`` (else :func:`tell_prefect_stopped` later, given what this returns: the flow runs
    its tasks waited in): the answer path never uses them again either way; a stopped
    sub-process run's tasks close (see the module docstring)."""
    flow_runs = task_store.release_open_tasks(run.id)
    if prefect:
        tell_prefect_stopped([(run, flow_runs)])
    if run.parent_run_id:
        close_open_tasks(run.id, f"its process stopped ({run.error}); resuming run {run.parent_run_id} asks again")
    return flow_runs


def tell_prefect_stopped(stopped: list[tuple[Run, list[str]]]) -> None:
    """Move the Prefect flow runs that stopped runs' processes left open to ``Crashed``: for each
    (run, the flow runs its tasks waited in), those, the run's own, and those it had no time to
    record. However many runs stopped, Prefect is asked once whether it answers and once for
    the unrecorded flow runs; then each open flow run is read with the others and given its state
    (a machine that went down with hundreds of runs is settled in seconds, not minutes)."""
    if not stopped:
        return
    try:
        from flows.prefect.api import reachable
        from flows.prefect.leftovers import mark_crashed, unrecorded_flow_runs

        if not reachable():
            # Never by starting Ergon's local server, nor by waiting out the client's retries: the
            # run's own process records its crash on its way out, also when the API is gone
            # (flows.prefect.watchdog). The run's next flow run supersedes these when it resumes.
            log.info("Prefect's API does not answer: the flow runs of %s are left as they are", _named(stopped))
            return
        unrecorded = unrecorded_flow_runs({run.id: run.ended_at for run, _ in stopped if run.parent_run_id is None})
        by_message: dict[str, list[str]] = {}
        for run, flow_runs in stopped:
            own = [run.prefect_flow_run_id] if run.prefect_flow_run_id else []
            by_message.setdefault(f"Ergon: {run.error or 'its process stopped'}", []).extend(
                [*flow_runs, *own, *unrecorded.get(run.id, [])])
        for message, ids in by_message.items():
            if ids:
                mark_crashed(list(dict.fromkeys(ids)), message=message)
    except Exception as exc:  # noqa: BLE001 - Prefect's view is secondary; the store decides who gets answers
        # Prefect's refusal, explained in one line (an ErgonError), needs no traceback; anything else may be a bug
        log.warning("could not mark the Prefect flow runs of %s crashed: %s", _named(stopped), exc,
                    exc_info=not isinstance(exc, ErgonError))


def _named(stopped: list[tuple[Run, list[str]]]) -> str:
    ids = [run.id for run, _ in stopped]
    return f"run {ids[0]}" if len(ids) == 1 else f"{len(ids)} runs ({', '.join(ids[:3])}, …)"


def _taken_on_reentry(task: HumanTask) -> bool:
    """Whether the run is on its way back to the task (resumed from its checkpoint, not yet
    re-entered the visit that asked): no flow run waits for the task, its visit ended, and the
    run is starting again or a process has executed it since that visit ended (its heartbeat is
    newer). The re-entered visit then finds the task answered and takes that answer; a visit that
    re-entered before the answer came waits in a flow run the answer is handed to."""
    from flows.store import visits as visit_store

    run = run_store.get_run(task.run_id)
    if run is None or run.status not in ("pending", "running", "paused") or task.prefect_flow_run_id:
        return False
    visit = visit_store.get_visit(task.visit_id) if task.visit_id else None
    if visit is None or visit.status == "running" or visit.ended_at is None:
        return False
    return run.status == "pending" or (run.heartbeat_at is not None and run.heartbeat_at > visit.ended_at)


def deliver(task: HumanTask) -> None:
    """Hand a recorded answer to the Prefect flow run that waits for it (the ``waiting`` state)."""
    from flows.prefect.resume import resume_answered

    resume_answered(task)


def answer(task_id: str, user: str | User | humans.Actor, raw_answer: Any, via: TaskChannel = "cli") -> Answered:
    """Answer a task as ``user`` through ``via`` — only when its run can take the answer.

    Raises :class:`flows.humans.TaskRefused` (nothing recorded but the refusal, and the closing
    of a task whose run is over) and :class:`flows.humans.TaskNotFound`. Otherwise the answer is
    checked and recorded by :func:`flows.humans.answer` and handed to the run (see the module
    docstring); a hand-over that fails is in :attr:`Answered.errors` (the answer stands).
    """
    from flows.runs.detached import resume_detached
    from flows.runs.lifecycle import ResumeRefused

    who = humans.actor(user)
    task = task_store.get_task(task_id)
    if task is None:
        raise humans.TaskNotFound(f"no task {task_id}")
    # a run found stopped: the answer is recorded first, Prefect told after (its client is the slow part)
    state = task_run_state(task, tell_prefect=False)
    try:
        if state.state == "over":
            if task.status in TASK_OPEN:
                close_open_tasks(task.run_id, state.reason)
            raise humans.refuse(task_id, who, "answer", f"task {task_id} cannot be answered: {state.reason}",
                                detail={"via": via})
        result = humans.answer(task_id, who, raw_answer, via=via)
    finally:
        if state.stopped_now and state.run is not None:
            tell_prefect_stopped([(run_store.require_run(state.run.id), [])])
    errors = list(result.hook_errors)
    if state.state == "resumable" and state.run is not None:
        try:
            resume_detached(state.run, who.name)
        except ResumeRefused as exc:  # resumed by someone else meanwhile: that run finds the answer
            log.info("run %s: %s", state.run.id, exc)
        except ErgonError as exc:  # Prefect's API down or refusing: the answer waits in the store
            errors.append(f"{exc}; run {state.run.id} takes this answer when it resumes "
                          f"(`ergon runs resume {state.run.id}` once Prefect answers)")
            return Answered(result.task, "checkpoint", f"run {state.run.id} had stopped ({state.run.error}); "
                                                       "it was not resumed", errors)
        log_file = logs_dir() / f"run-{state.run.id}.resume.log"
        return Answered(result.task, "checkpoint", f"run {state.run.id} had stopped ({state.run.error}); it resumes "
                                                   f"from its checkpoint with this answer (log: {log_file})", errors)
    if _taken_on_reentry(result.task):
        return Answered(result.task, "checkpoint", f"run {result.task.run_id} is resuming from its checkpoint; it "
                                                   "takes this answer when it reaches the task", errors)
    try:
        deliver(result.task)
    except ErgonError as exc:  # Prefect refused, or no flow run waits: said to the person (errors), not a bug
        log.info("task %s: the run was not resumed: %s", task_id, exc)
        errors.append(str(exc))
    except Exception as exc:  # noqa: BLE001 - the answer is recorded and final; say the run did not get it
        log.warning("task %s: the run was not resumed", task_id, exc_info=True)
        errors.append(str(exc))
    return Answered(result.task, "prefect", f"run {result.task.run_id} resumes", errors)


def on_run_recorded(run: Any) -> None:
    """The ``run.recorded`` moment (:mod:`flows.moments`): a run whose process stopped keeps its
    tasks' answers for the resumed run; any other end leaves nothing to take an answer."""
    if run.status == "crashed":
        run_stopped(run)
    else:
        run_ended(run.id, run.status, run.error)
