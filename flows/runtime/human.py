"""The `human_task` node: create the task, pause the Prefect flow run, take the answer.

On entering the node the task is recorded with its title and description rendered from the
context *now* (and stored rendered), then the flow run pauses with a Prefect ``RunInput`` model
generated from the task's fields, under a key unique to this visit (Prefect hands a reused
key's old answer straight back). The pause polls every ``PAUSE_POLL_SECONDS`` so an answer moves
the run on within about a second.

An answer comes back the same way whoever gave it: through ``ergon tasks answer`` or the
dashboard (validated, recorded, then :func:`flows.resume.resume_answered` resumes the run), or
through Prefect's own resume form/API (Prefect validates it against the model; the task is then
recorded here as answered by ``prefect``). The fields are copied into the context per the
node's ``writes``; the node's guards then route. A ``timeout`` expires the task: the run takes
``on_timeout`` when the node has it, and fails with "task expired" otherwise.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import re
from collections.abc import Awaitable
from datetime import timedelta
from typing import Any

from compiler.plan import PlanNode
from flows.tools import tool
from flows.runtime.bodies import Effect
from flows.runtime.errors import NodeFailed, RunCancelled
from flows.runtime.parallel import IN_PARALLEL
from flows.settings import PAUSE_POLL_SECONDS

#: How long a blocking pause waits when the node sets no timeout (a process can wait this long;
#: longer waits belong to deployments, where the run suspends instead and frees its process).
DEFAULT_WAIT_SECONDS = 30 * 24 * 3600
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$")


def seconds(value: Any) -> float | None:
    """`90`, `"90s"`, `"30m"`, `"2h"`, `"3d"` → seconds (None when unset or unreadable)."""
    if value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    match = _DURATION.match(str(value))
    if not match:
        return None
    return float(match.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[match.group(2)]


def visit_pause_key(node_id: str, run_id: str, visit_id: str) -> str:
    from flows.humans import pause_key

    return pause_key(node_id, int(hashlib.sha256(visit_id.encode()).hexdigest()[:8], 16), run_id=run_id)


class TaskExpired(Exception):
    """Nobody answered within the task's timeout (the task is closed as expired)."""


async def ask_person(*, run_id: str, visit_id: str | None, node_id: str, title: str, description: str | None,
                     assignee: str | None, fields: list[dict[str, Any]], four_eyes: bool = False,
                     timeout: float | None = None, listener: Any = None) -> tuple[Any, dict[str, Any]]:
    """Create a task, wait until it is answered, return (task, answer).

    Shared by `human_task` nodes and the agents' `ask_user` tool. Raises :class:`TaskExpired`, and
    :class:`RunCancelled` when the run is cancelled while it waits.
    """
    from prefect.runtime import flow_run

    from flows import humans
    from flows.runtime import suspend
    from flows.store import repo
    from flows.store.models import utcnow

    own_subflow = IN_PARALLEL.get()
    # a run resumed after suspending re-enters this visit: same task, same key (flows.runtime.suspend)
    task = None if own_subflow else suspend.reentered_task(run_id, node_id, visit_id)
    if task is None:
        key = visit_pause_key(node_id, run_id, visit_id or node_id)
        if repo.task_by_pause_key(key) is not None:  # a second question in the same visit
            key = visit_pause_key(node_id, run_id, f"{visit_id}-{utcnow().timestamp()}")
        task = repo.create_task(
            run_id, node_id, title, visit_id=visit_id, description=description, assignee=assignee, fields=fields,
            four_eyes=four_eyes, due_at=utcnow() + timedelta(seconds=timeout) if timeout else None, pause_key=key,
            prefect_flow_run_id=None if own_subflow else str(flow_run.id), actor="ergon",
        )
    key = task.pause_key
    if repo.run_status(run_id) == "running":
        repo.set_run_status(run_id, "paused")
    if listener is not None:
        listener("paused", node_id, {"task_id": task.id, "title": title})
    wait = int(timeout or DEFAULT_WAIT_SECONDS)
    prompt = f"**{title}**\n\n{description or ''}"
    if own_subflow:
        waiting = _answer_subflow().with_options(flow_run_name=f"{node_id}: {title}"[:120])(
            task.id, fields, f"{node_id}_answer", prompt, key, wait)
    elif suspend.suspendable(timeout):  # under a deployment: the process exits until the answer comes
        waiting = suspend.suspend_for_answer(fields, f"{node_id}_answer", prompt, key)
    else:
        waiting = _await_answer(fields, f"{node_id}_answer", prompt, key, wait)
    answer = await _unless_cancelled(waiting, run_id)
    if answer is None:
        repo.close_task(task.id, "expired", actor="ergon", reason=f"no answer within {timeout} s")
        _running_again(run_id)
        raise TaskExpired(task.id)
    task = repo.get_task(task.id)
    if task.status != "completed":  # answered through Prefect's own form or API
        clean, errors = humans.validate_answer(task.fields, answer)
        if errors:  # Prefect validated against the same model: this is a bug, not a user error
            raise NodeFailed(f"the answer resumed through Prefect does not fit the task: {'; '.join(errors)}")
        task = repo.answer_task(task.id, clean, answered_by="prefect", answered_via="prefect")
    _running_again(run_id)
    return task, dict(task.answer or answer)


def _running_again(run_id: str) -> None:
    """The run is running again once none of its tasks waits any more (others may, in parallel)."""
    from flows.store import repo

    if repo.run_status(run_id) == "paused" and repo.open_tasks_count(run_id) == 0:
        repo.set_run_status(run_id, "running")


async def _await_answer(fields: list[dict[str, Any]], model_name: str, prompt: str, key: str,
                        wait: int) -> dict[str, Any] | None:
    """Pause the current flow run until resumed with input; the answer, or None on timeout."""
    from prefect.flow_runs import FlowPauseTimeout, apause_flow_run

    from flows import humans

    model = humans.run_input_model(fields, model_name, description=prompt)
    try:
        run_input = await apause_flow_run(wait_for_input=model, timeout=wait, poll_interval=PAUSE_POLL_SECONDS, key=key)
    except FlowPauseTimeout:
        return None
    return humans.input_to_answer(run_input)


@functools.cache
def _answer_subflow() -> Any:
    """The flow a task waits in when several tasks of one run may be open at once.

    Built on first use: Prefect must not be imported before the CLI has pointed it at its server
    (importing it reads its settings; see :mod:`flows.settings`), and this module is imported
    with the built-in tools, long before that."""
    from prefect import flow

    @flow(name="ergon-human-task", persist_result=False, validate_parameters=False, log_prints=False)
    async def ergon_human_task(task_id: str, fields: list[dict[str, Any]], model_name: str, prompt: str, key: str,
                               wait: int) -> dict[str, Any] | None:
        """A task's own flow run, paused until its answer comes (one of several open at once)."""
        from prefect.runtime import flow_run

        from flows.store import repo

        repo.set_task_flow_run(task_id, str(flow_run.id))
        return await _await_answer(fields, model_name, prompt, key, wait)

    return ergon_human_task


async def _unless_cancelled(waiting: Awaitable[Any], run_id: str) -> Any:
    """Await ``waiting``; give up with :class:`RunCancelled` when the run is cancelled meanwhile
    (Prefect's pause only watches its own flow run's state, not Ergon's store)."""
    from flows.store import repo

    async def cancelled() -> None:
        while repo.run_status(run_id) not in ("cancelling", "cancelled"):
            await asyncio.sleep(PAUSE_POLL_SECONDS)

    answer = asyncio.ensure_future(waiting)
    watch = asyncio.ensure_future(cancelled())
    try:
        done, _ = await asyncio.wait({answer, watch}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for pending in (answer, watch):
            if not pending.done():
                pending.cancel()
    if answer in done:
        return answer.result()
    raise RunCancelled("cancelled while waiting for a person")


async def human_task_effect(node: PlanNode, context: dict[str, Any], services: Any, visit_id: str | None) -> Effect:
    from flows import humans

    spec = node.body["task"]
    title, description = humans.render_task(spec, context)
    wait = seconds(node.body.get("timeout"))
    try:
        task, answer = await ask_person(
            run_id=services.run_id, visit_id=visit_id, node_id=node.id, title=title, description=description,
            assignee=spec.get("assignee"), fields=spec.get("fields") or [], four_eyes=bool(spec.get("four_eyes")),
            timeout=wait, listener=services.listener,
        )
    except TaskExpired:
        if node.body.get("on_timeout"):
            return Effect(output={"expired": True}, route_to=node.body["on_timeout"])
        raise NodeFailed(f"task expired: `{title}` ({node.id}) got no answer within {node.body.get('timeout')}") from None
    update = {k: v for k, v in answer.items() if k in node.writes}
    return Effect(update=update, output=answer, input={"task_id": task.id, "title": title})


@tool(name="ask_user")
async def ask_user(question: str, fields: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Ask a person a question and wait for the answer (creates a human task; the run pauses).

    Args:
        question: What to ask, in plain language.
        fields: Extra answer fields the person fills in, each {name, type (text|string|number|boolean|select),
            required, options, label}; a free-text `answer` field is always included.
    """
    from flows.tools.context import current

    ctx = current()
    if not ctx.run_id:
        raise NodeFailed("ask_user needs a run: it creates a human task")
    asked = [{"name": "answer", "type": "text", "required": True, "label": question}]
    asked += [f for f in (fields or []) if isinstance(f, dict) and f.get("name") not in ("answer", None)]
    try:
        task, answer = await ask_person(run_id=ctx.run_id, visit_id=ctx.visit_id, node_id=ctx.node_id or "ask_user",
                                        title=question, description=f"Asked by the agent of node `{ctx.node_id}`.",
                                        assignee=ctx.assignee, fields=asked, listener=ctx.listener)
    except TaskExpired:
        return {"error": "nobody answered in time"}
    return {"answered_by": task.answered_by, **answer}
