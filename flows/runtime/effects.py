"""What a node body gives back (:class:`Effect`) and what it may call outside itself (:class:`Services`).

A body never touches the context, the store's run record or Prefect itself: it returns the update
it wants to make (checked and applied by the engine through
:func:`flows.runtime.context.apply_update`) and reaches the outside world only through the
:class:`Services` the run owner hands the engine. Two of those services are *ports*, small
protocols implemented elsewhere:

* :class:`Pauses` — how a run waits for a person's answer. The Prefect adapter implements it
  (:class:`flows.prefect.pause.PrefectPauses`: a blocking pause, a subflow of its own, or a
  suspension under a deployment).
* :class:`RunState` — the run's status while a person is asked (``paused`` / ``running`` again).
  The run's recorder implements it (:class:`flows.execution.recorder.StoreRecorder`), so that the
  run owner stays the only writer of a run's status.
"""

from __future__ import annotations

import contextvars
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, fields
from typing import Any, Literal, Protocol

from compiler.plan import Plan
from flows.runtime.errors import ErrorKind

#: listener(event, node_id, detail) — the CLI prints live progress from these
Listener = Callable[[str, str, dict[str, Any]], None]

#: The orchestrator's id of the task run executing the current visit attempt, set by the executor
#: around each attempt (:mod:`flows.prefect.executor`); the recorder stores it on the visit it
#: starts, so the dashboard links each visit to its Prefect task run. None outside a task run.
TASK_RUN_ID: contextvars.ContextVar[str | None] = contextvars.ContextVar("ergon_task_run_id", default=None)


def no_listener(event: str, node: str, detail: dict[str, Any]) -> None:
    """The listener of a run nobody watches."""


@dataclass
class Effect:
    """The result of a leaf body: what to write, what to record."""

    update: dict[str, Any] = field(default_factory=dict)
    output: Any = None
    input: Any = None
    child_run_id: str | None = None
    #: set when the body itself decides where the run goes (a human task's `on_timeout`)
    route_to: str | None = None
    #: a template step's output submission: its id and its unwritten rows
    #: (:func:`flows.store.submissions.submission_rows`), written with the visit's checkpoint
    submission: tuple[str, dict[str, list[dict[str, Any]]]] | None = None


@dataclass
class RunResult:
    """How a run ended: a sub-process's, as its parent's process body sees it, and every run's,
    as :func:`flows.runs.start` returns it (also what ``ergon run --json`` prints)."""

    run_id: str
    status: str
    outcome: str | None
    context: dict[str, Any]
    error: str | None = None
    #: whose fault a failure is: ``definition``, ``world``, ``model`` or ``internal`` (:mod:`flows.runtime.errors`)
    error_kind: ErrorKind | None = None

    def to_dict(self) -> dict[str, Any]:
        # its fields as they are: ``asdict`` would copy the whole context, deeply, at every run's end
        return {f.name: getattr(self, f.name) for f in fields(self)}


WaitMode = Literal["pause", "subflow", "suspend"]


@dataclass(frozen=True)
class AnswerWait:
    """One wait for a human task's answer, as the human-task body asks for it.

    ``mode``: ``pause`` blocks the run's own flow run; ``subflow`` waits in a flow run of its own
    (several tasks of one run may be open at once); ``suspend`` ends the process until the answer
    comes (runs under a deployment only, see :meth:`Pauses.can_suspend`)."""

    task_id: str
    fields: list[dict[str, Any]]
    model_name: str
    prompt: str
    key: str
    seconds: int
    title: str
    mode: WaitMode = "pause"
    #: the form asks a one-time answer code (the task names an assignee or four-eyes:
    #: :mod:`flows.answer_codes`); the answer then carries its SHA-256 under :data:`PROOF_KEY`,
    #: never the code
    proof: bool = False


#: Where an answer from the orchestrator's own form carries the SHA-256 of the answer code typed.
PROOF_KEY = "__answer_code_sha256__"


class Pauses(Protocol):
    """How a run waits for a person (implemented by :mod:`flows.prefect.pause`)."""

    #: the run's own orchestrator flow run id (recorded on the tasks it waits for)
    flow_run_id: str | None

    def can_suspend(self, timeout: float | None) -> bool:
        """Whether the run may suspend (free its process) instead of blocking."""
        ...

    async def wait_for_answer(self, wait: AnswerWait) -> dict[str, Any] | None:
        """The answer, or None when ``wait.seconds`` passed without one."""
        ...

    async def release(self) -> None:
        """The run stopped waiting without an answer and goes on (an operator advanced it): its
        own flow run runs again."""
        ...


class RunState(Protocol):
    """The run's status as seen by a body that waits (implemented by the run's recorder)."""

    def status(self) -> str | None: ...

    def mark_paused(self) -> None:
        """A task of this run now waits for a person."""
        ...

    def mark_running_if_idle(self) -> None:
        """Running again, once none of the run's tasks waits any more (others may, in parallel)."""
        ...


@dataclass
class Services:
    """What bodies may call outside themselves (built for each run by :mod:`flows.execution.body`)."""

    #: run a child Plan as a sub-run: (plan, inputs, parent visit id, run type) → RunResult
    run_child: Callable[[Plan, dict[str, Any], str | None, str | None], Awaitable[RunResult]]
    #: find a Plan by definition name and optional pinned version
    resolve_plan: Callable[[str, int | None], Plan]
    #: find an interaction definition by name
    resolve_interaction: Callable[[str], Any] | None = None
    #: environment definitions by name (model failover lists)
    environments: dict[str, Any] = field(default_factory=dict)
    default_environment: str | None = None
    run_id: str | None = None
    started_by: str | None = None
    process_name: str = ""
    process_description: str | None = None
    #: the run's token/cost ceiling (the definition's `budget:`)
    run_budget: dict[str, Any] | None = None
    #: the run's `context.schema` (what a write is checked against; a task's answer is checked
    #: against it before it is accepted)
    context_schema: dict[str, Any] = field(default_factory=dict)
    #: the engine's progress listener (event, node id, detail)
    listener: Listener = no_listener
    #: how the run waits for a person's answer
    pauses: Pauses | None = None
    #: the run's status while it waits
    run_state: RunState | None = None
    #: a supervised run: tell its supervisor a person is now asked (node id, task detail)
    human_task_waiting: Callable[[str, dict[str, Any]], Awaitable[None]] | None = None
    #: how an agent's workstream (a delegated sub-agent) gets an orchestrator run of its own:
    #: ``run_workstream(name, launch_id, body)`` awaits ``body(flow_run_id)`` in it
    #: (:mod:`flows.runtime.workstreams`); None: the child runs as a bare asyncio task
    run_workstream: Callable[..., Awaitable[Any]] | None = None
    #: a template run: its submissions (:class:`flows.submissions.template_runs.TemplateRun`),
    #: whose steps then run as :mod:`flows.runtime.bodies.template_step`; None for other runs
    template: Any = None
