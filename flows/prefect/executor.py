"""Each node visit a Prefect task run, with the node's retry policy as Prefect's retries.

A visit runs as a task run named after the node (``node[item]`` inside fan-outs), tagged with its
type and lane (see :mod:`flows.prefect.tagging` for how without Prefect's per-task concurrency
lease), with the node's retry policy mapped onto Prefect's retries: exponential backoff with a
cap, jitter, timeout, and a retry condition that retries only the listed error kinds and never a
rejected write.

Task results are not persisted and nothing is cached by Prefect: Ergon's store is the checkpoint
(see :mod:`flows.runtime.engine`), which is what makes resume exact — and avoids Prefect's
input-hash cache returning an old result for a loop's second visit.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE
from prefect.context import TaskRunContext

from compiler.plan import PlanNode
from flows.prefect import progress
from flows.prefect.config import TASK_DEFAULTS
from flows.prefect.tagging import limited_tags, node_tags, record_tags, split_tags
from flows.runtime.attempts import retry_delays
from flows.runtime.effects import TASK_RUN_ID
from flows.runtime.retries import retried_names, retries

#: last exception per task run id, read by the retry condition
_LAST_ERROR: dict[Any, BaseException] = {}


class VisitCall:
    """What one visit's task run is called with: its name, the attempt, the tags to record.

    One parameter of a plain class, not three: Prefect walks every parameter of every task run
    (looking for upstream futures, resolving them, collecting the run's inputs), recursing into
    tuples, dicts, dataclasses and pydantic models, but not into other objects — measured on the
    chain benchmark, walking ``run_name``, ``attempt_fn`` and ``tags`` one by one cost three times
    the baseline's walk of its one parameter. ``task_run_name`` reads the name as an attribute."""

    __slots__ = ("attempt_fn", "run_name", "tags")

    def __init__(self, run_name: str, attempt_fn: Callable[[int], Awaitable[Any]], tags: tuple[str, ...]) -> None:
        self.run_name = run_name
        self.attempt_fn = attempt_fn
        self.tags = tags


class VisitReturn:
    """What one visit's task run returns: the engine's result (a visit's ``Effect``), in a plain
    slotted class for the same reason :class:`VisitCall` is one — Prefect walks a task's return
    value to link it to the task run, recursing into dataclasses, dicts and lists: a tool's whole
    output, a model's answer and the rendered input, at every visit (measured on the foreach
    benchmark: ~0.1 ms an item for a no-op; more the larger the output)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


@task(name="node", cache_policy=NO_CACHE, task_run_name="{visit.run_name}", **TASK_DEFAULTS)  # type: ignore[call-overload]
async def node_visit(visit: VisitCall) -> VisitReturn:
    """One visit attempt; Prefect calls it again for each retry. ``visit.tags`` are written onto
    the task-run record here instead of being Prefect task tags (see :mod:`flows.prefect.tagging`)."""
    ctx = TaskRunContext.get()
    attempt = ctx.task_run.run_count if ctx else 1
    if ctx and visit.tags:
        record_tags(ctx.task_run, list(visit.tags))
    token = TASK_RUN_ID.set(str(ctx.task_run.id) if ctx else None)  # the visit records its task run
    try:
        return VisitReturn(await visit.attempt_fn(max(attempt, 1)))
    except BaseException as exc:
        if ctx:
            _LAST_ERROR[ctx.task_run.id] = exc
        raise
    finally:
        TASK_RUN_ID.reset(token)
        if ctx:  # a fan-out run inside this task run: its progress artifact says where it ended
            await progress.settle(ctx.task_run.id)


class RetryCondition:
    """A node task's ``retry_condition_fn``: retry only the listed error kinds (all when none are
    listed), never an error retrying cannot fix (:mod:`flows.runtime.retries`)."""

    __slots__ = ("names",)

    def __init__(self, kinds: tuple[str, ...]) -> None:
        self.names = retried_names(kinds)

    def allows(self, exc: BaseException | None, state_name: str = "") -> bool:
        return retries(exc, self.names, state_name)

    def __call__(self, task_obj: Any, task_run: Any, state: Any) -> bool:
        return self.allows(_LAST_ERROR.pop(task_run.id, None), state.name)


def retried_after(exc: BaseException) -> bool:
    """Whether Prefect runs the current visit again after ``exc`` escapes its task run: retries
    left and the node's retry condition met, as Prefect's task engine decides it next (its count
    of retries done is the task run's ``run_count`` minus one). False outside a task run."""
    ctx = TaskRunContext.get()
    if ctx is None or ctx.task_run.run_count - 1 >= ctx.task.retries:
        return False
    condition = ctx.task.retry_condition_fn
    return condition.allows(exc) if isinstance(condition, RetryCondition) else condition is None


#: Configured Prefect tasks by (node id, Prefect tags, retry policy), shared by every run of the
#: process: building a Prefect ``Task`` reads its function's source, ~1-3 ms per node.
_TASKS: dict[tuple[str, tuple[str, ...], str], Any] = {}
_TASKS_MAX = 4096


def _configured_task(node: PlanNode, prefect_tags: list[str]) -> Any:
    policy = node.retry
    key = (node.id, tuple(prefect_tags), repr(policy))
    found = _TASKS.get(key)
    if found is None:
        if len(_TASKS) >= _TASKS_MAX:
            _TASKS.clear()
        found = _TASKS[key] = node_visit.with_options(
            name=node.id,
            tags=prefect_tags,
            retries=policy.retries,
            retry_delay_seconds=retry_delays(policy) or 0,
            retry_jitter_factor=policy.jitter or None,
            timeout_seconds=policy.timeout_seconds,
            retry_condition_fn=RetryCondition(tuple(policy.retry_on)),
        )
    return found


class PrefectExecutor:
    """The engine's ``Executor``: runs visits as Prefect task runs, tagged per :mod:`flows.prefect.tagging`.

    ``limited`` is the set of tags that have a Prefect concurrency limit (``None``: treat every tag
    as limited), read once per run by :meth:`for_run`."""

    def __init__(self, limited: frozenset[str] | None = None) -> None:
        self._limited = limited

    @classmethod
    async def for_run(cls) -> PrefectExecutor:
        return cls(await limited_tags())

    async def visit(self, node: PlanNode, run_name: str, attempt_fn: Callable[[int], Awaitable[Any]]) -> Any:
        prefect_tags, recorded = split_tags(node_tags(node), self._limited)
        returned = await _configured_task(node, prefect_tags)(VisitCall(run_name, attempt_fn, tuple(recorded)))
        return returned.value
