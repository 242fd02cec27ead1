"""What a test case's run executes with instead of Prefect: visits in-process, people from the test file.

The flow body (:func:`flows.execution.body.execute_alone`) takes a ``Backend``; Prefect's
(:mod:`flows.prefect.build`) makes each visit a task run and waits for people through Prefect's
pauses. :class:`InProcessBackend` runs the same body with:

* :class:`AttemptLoop` as the engine's ``Executor``: the node's retry policy — as many attempts,
  the same errors never retried, the same ``retry_on`` kinds (one decision with Prefect's
  executor, :mod:`flows.runtime.retries`) and ``timeout_seconds`` — but no delay between attempts: a test
  checks what a retry does, not how long it waits;
* :class:`AnsweringPauses` as the ``Pauses`` port: a human task whose node the case answers
  (``mocks.tasks``: one answer for every visit, or a list used one per visit in order) is answered
  through :func:`flows.humans.answer`, the rules every channel uses (who may answer, the fields'
  checks), as the case's person; a task the case does not answer — its node has no answer, or
  the visits used up its list — ends the run ``paused``, as a run suspended for a person does.
  Who the person is: ``as``, else the task's single assignee, else ``tester``. Their groups: the
  test file's ``people`` when it gives them (a person it does not list is in no group), else
  exactly the task's group (the test says who answers; the temporary store has no users). An
  answer refused for who gives it (not in the group, not the assignee) leaves the task open, as
  ``ergon tasks answer`` does: the run ends ``paused`` and the node is listed in :attr:`refused`;
  an answer refused for its fields fails the node;
* sub-processes run by the same body, in the same process.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any

from compiler.plan import Plan, PlanNode
from flows import humans
from flows.execution.body import execute_alone
from flows.execution.request import RunRequest
from flows.runtime.effects import AnswerWait, Pauses, RunResult
from flows.runtime.attempts import run_attempts
from flows.runtime.errors import NodeFailed
from flows.store import tasks as task_store
from flows.testing.spec import People, TaskAnswer

#: Who answers a task when the test names nobody and the task names no single user.
DEFAULT_PERSON = "tester"


class AttemptLoop:
    """The engine's ``Executor`` for tests (see the module docstring)."""

    #: the engine's own attempt loops (a `task_runs: node` foreach's items) skip the delays too
    waits_between_attempts = False

    async def visit(self, node: PlanNode, run_name: str, attempt_fn: Callable[[int], Awaitable[Any]]) -> Any:
        return await run_attempts(node.retry, attempt_fn, wait=False)


class CasePaused(BaseException):  # noqa: N818 - a signal, as Prefect's own pause is
    """A human task the case does not answer: the run stops here, ``paused``.

    A BaseException, like Prefect's suspension, so that no node body or retry takes it for a
    failure; ``visit_status`` has the engine record the visit ``paused``."""

    visit_status = "paused"

    def __init__(self, node_id: str, why: str = "the case gives no answer in mocks.tasks") -> None:
        super().__init__(f"the human task of `{node_id}` waits for a person ({why})")
        self.node_id = node_id


class AnsweringPauses:
    """The ``Pauses`` port answering from ``mocks.tasks`` (see the module docstring)."""

    flow_run_id: str | None = None

    def __init__(self, answers: dict[str, TaskAnswer | list[TaskAnswer]], people: People | None = None) -> None:
        self._answers = answers
        self._people = people
        self._asked: Counter[str] = Counter()  # the tasks of each node answered so far
        #: the nodes whose answer was refused for who gave it, in order
        self.refused: list[str] = []

    def can_suspend(self, timeout: float | None) -> bool:
        return False

    async def wait_for_answer(self, wait: AnswerWait) -> dict[str, Any] | None:
        task = task_store.get_task(wait.task_id)
        assert task is not None, "a task created a moment ago is gone"
        given = self.answer_for(task)
        if given is None:
            raise self.unanswered(task)
        who = self.person(task, given)
        try:
            answered = humans.answer(task.id, who, given.answer, via="api", hooks=False)
        except humans.TaskRefused as exc:
            if not exc.errors:  # refused for who answers: the task stays open, as for any channel
                self.refused.append(task.node_id)
                raise CasePaused(task.node_id, f"the answer of `{who.name}` was refused: {exc}") from None
            raise NodeFailed(f"the test's answer to the task of `{task.node_id}` was refused: {exc}",
                             kind="definition") from None
        return dict(answered.task.answer or {})

    def unanswered(self, task: Any) -> CasePaused:
        """The pause of a task the case gives no answer for (none for its node, or its list used up)."""
        listed = self._answers.get(task.node_id)
        if isinstance(listed, list):
            return CasePaused(task.node_id, f"the case's {len(listed)} answer(s) in mocks.tasks are used up")
        return CasePaused(task.node_id)

    def person(self, task: Any, given: TaskAnswer) -> humans.Actor:
        """Who answers ``task`` with ``given``, in the groups the test file gives them (see the module docstring)."""
        assignee = task.assignee or ""
        group = assignee.removeprefix("group:") if assignee.startswith("group:") else None
        name = given.as_ or (assignee if assignee and group is None else DEFAULT_PERSON)
        groups = self._people.get(name, []) if self._people is not None else [group] if group else []
        return humans.Actor(name=name, groups=frozenset(groups))

    def answer_for(self, task: Any) -> TaskAnswer | None:
        """The answer to ``task``: the case's for its node (a list's next one), else None (the run pauses)."""
        given = self._answers.get(task.node_id)
        if not isinstance(given, list):
            return given
        self._asked[task.node_id] += 1
        turn = self._asked[task.node_id]
        return given[turn - 1] if turn <= len(given) else None

    async def release(self) -> None:
        """Nothing to release: the run never left this process."""


class InProcessBackend:
    """The flow body's ``Backend`` for a test case (see the module docstring)."""

    flow_run_id: str | None = None

    def __init__(self, pauses: AnsweringPauses) -> None:
        self.pauses: Pauses = pauses

    async def executor(self) -> AttemptLoop:
        return AttemptLoop()

    async def run_subflow(self, plan: Plan, params: dict[str, Any], request: RunRequest) -> RunResult:
        return await execute_alone(plan, params, request, self)

    def cancel_requested(self) -> bool:
        return False

    def interruption(self) -> str | None:
        return None
