"""The `human_task` node: create the task, wait for its answer, copy the answer into the context.

On entering the node the task is recorded with its title and description rendered from the
context *now* (and stored rendered), then the run waits for the answer through the
:class:`~flows.runtime.effects.Pauses` port, under a key unique to this visit (Prefect hands a
reused key's old answer straight back). How it waits is decided here, how that is done in
Prefect by :mod:`flows.prefect.pause`:

* ``subflow`` — the visit may overlap others (foreach/branch items, pipeline nodes; see
  :mod:`flows.runtime.parallel`): the task waits in a flow run of its own;
* ``suspend`` — the run runs under a deployment and the task has no ``timeout``: the process
  exits until the answer comes, and the flow body re-enters this visit afterwards;
* ``pause`` — otherwise the run's own flow run blocks, polling for the answer.

An answer comes back the same way whoever gave it: through ``ergon tasks answer`` or the
dashboard (checked and recorded there, then the run resumed: the store's answer is taken), or
through Prefect's own resume form/API (Prefect validates it against the same model; then it is
checked here by :func:`flows.humans.answer_through_prefect` — who gives it, proven by a one-time
answer code (:mod:`flows.answer_codes`) where the task names an assignee or four-eyes, the same
rules as every other channel, the field checks — and recorded with the code's owner as ``answered_by``, or
``prefect`` for an unassigned task). A refused answer is audited and the run asks again in
Prefect, under a new key (Prefect hands a used key's old answer straight back), the reason at
the top of the form's description; the task's deadline still counts from its creation. The
fields are copied into the context per the node's ``writes``; the node's guards then route. A ``timeout`` expires the task: the run takes ``on_timeout`` when the node has it,
and fails with "task expired" otherwise.

Re-entry: a run continues after its process stopped while a person was asked — suspended under
a deployment (Prefect runs the flow body again), or killed and resumed from its checkpoint
(``ergon runs resume``, or an answer to the waiting task). The engine starts a new visit of the
node (of the same item, in a fan-out); the task the visit that did not finish created is found
(:func:`reentered_task`) and belongs to the new visit from then on, so no second task is created
and the same key is used. When that task was answered while the run was stopped — or just before
its process died, too soon for the visit to finish with the answer — the kept answer is the
answer: the visit goes on without waiting. An agent asking several questions in one visit
gets them back in order (each question takes the oldest task not taken yet).
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
import re
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

from compiler.ir import HumanTaskNode
from compiler.plan import PlanNode, ir_json
from flows import humans
from flows.humans import TaskExpired
from flows.runtime.context import MAX_CONTEXT_BYTES
from flows.runtime.effects import PROOF_KEY, AnswerWait, Effect, Services, WaitMode
from flows.runtime.errors import Advanced, NodeFailed, RunCancelled
from flows.runtime.parallel import IN_PARALLEL
from flows.settings import PAUSE_POLL_SECONDS
from flows.store import tasks as task_store
from flows.store import visits as visit_store
from flows.store.models import TASK_OPEN, utcnow

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
    return humans.pause_key(node_id, int(hashlib.sha256(visit_id.encode()).hexdigest()[:8], 16), run_id=run_id)


def reentered_task(run_id: str, node_id: str, visit_id: str | None) -> Any:
    """The oldest task an unfinished earlier visit of this node (and item) created that nobody
    used yet — None when this visit asks anew.

    A task is unused when its visit did not complete, and it is still open, or it was answered
    after that visit ended (the answer was kept while the run was stopped), or before the visit's
    process stopped (crash detection closed the visit, or the stop cancelled it): the answer
    reached a process that died before checkpointing the visit, or a visit that suspended (it
    never takes an answer: the answer resumes the flow run, which re-enters the node). A task
    answered before its visit *failed* was used: that visit failed on the answer, so it is asked
    again."""
    if not visit_id:
        return None
    current = visit_store.get_visit(visit_id)
    if current is None:
        return None
    visits = {v.id: v for v in visit_store.visits_for_run(run_id)}

    def unused(task: Any) -> bool:
        asked = visits.get(task.visit_id) if task.visit_id else None
        if task.node_id != node_id or asked is None or asked.id == visit_id or asked.status == "completed" \
                or asked.item_key != current.item_key:
            return False
        if task.status in TASK_OPEN:
            return True
        if task.status != "completed":
            return False
        # a suspended visit (``paused``: its process exited to wait) took no answer, also not one
        # given while it was still suspending (the run shows paused before the visit's end is written)
        return (asked.status == "paused" or asked.ended_at is None or task.answered_at is None
                or task.answered_at >= asked.ended_at or _process_stopped(asked))

    tasks = sorted((t for t in task_store.tasks_for_run(run_id) if unused(t)), key=lambda t: t.created_at)
    return tasks[0] if tasks else None


def _process_stopped(visit: Any) -> bool:
    """Whether ``visit`` ended because its process stopped, not on its own (then it never used an
    answer it may have received)."""
    from flows.store.runs import CRASHED

    return visit.status == "cancelled" or (visit.error or "").startswith(CRASHED)


#: At most this many context fields in the table of Prefect's form, each value cut to this length.
ABOUT_FIELDS, ABOUT_VALUE_CHARS = 20, 160


def fields_about(templates: list[str | None], context: dict[str, Any]) -> dict[str, Any]:
    """The context fields a task is about: those its title and description read (all top-level
    fields when they read none), in the context's order, at most :data:`ABOUT_FIELDS`."""
    from compiler.templates import template_reads

    read: set[str] = set()
    for text in templates:
        if text:
            read |= template_reads(text)
    names = [k for k in context if k in read] or list(context)
    return {k: context[k] for k in names[:ABOUT_FIELDS]}


def _inline(text: str) -> str:
    """One line of text for markdown (no line breaks, no table pipes)."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _cell(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str, ensure_ascii=False)
    text = " ".join(text.split())  # a table cell is one line
    if len(text) > ABOUT_VALUE_CHARS:
        text = text[:ABOUT_VALUE_CHARS - 1] + "…"
    return text.replace("\\", "\\\\").replace("|", "\\|")


def form_description(title: str, description: str | None, about: dict[str, Any] | None, task_id: str, *,
                     refused: str | None = None, proof: bool = False) -> str:
    """The markdown above Prefect's resume form: what the approver decides on — the task's title and
    description, the context fields it is about as a table, and a link to the task in Ergon's inbox;
    first, when the last answer given through Prefect was refused, why; last, for a form that asks
    who answers (``proof``), the command that gives the answer code."""
    from flows.settings import dashboard_url

    parts = [f"**Ergon refused the last answer:** {_inline(refused)} — answer again below."] if refused else []
    parts.append(f"**{title}**")
    if description:
        parts.append(description)
    if about:
        rows = "\n".join(f"| `{_cell(k)}` | {_cell(v)} |" for k, v in about.items())
        parts.append(f"| field | value |\n|---|---|\n{rows}")
    parts.append(f"[Open this task in Ergon's inbox]({dashboard_url()}/inbox?task={task_id})")
    if proof:
        parts.append(f"Ergon checks who answers this task: get your one-time answer code with "
                     f"`ergon tasks code {task_id}`.")
    return "\n\n".join(parts)


async def ask_person(services: Services, *, visit_id: str | None, node_id: str, title: str,
                     description: str | None, assignee: str | None, fields: list[dict[str, Any]],
                     four_eyes: bool = False, timeout: float | None = None,
                     about: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
    """Create a task, wait until it is answered, return (task, answer).

    Shared by `human_task` nodes, `trigger: user` choices and the agents' `ask_user` tool.
    ``about`` are the context fields the task is about, shown with it in Prefect's form. Raises
    :class:`TaskExpired`, and :class:`RunCancelled` when the run is cancelled while it waits.
    """
    pauses, run_state, run_id = services.pauses, services.run_state, services.run_id
    if pauses is None or run_state is None or run_id is None:
        raise NodeFailed(f"`{node_id}` asks a person, and this run cannot wait for one", kind="internal")
    own_subflow = IN_PARALLEL.get()
    # a run continuing after its process stopped re-enters this visit: same task, same key
    task = reentered_task(run_id, node_id, visit_id)
    if task is not None:
        # a subflow records its flow run when it starts (until then no flow run waits for it)
        task = task_store.reattach_task(task.id, visit_id, None if own_subflow else pauses.flow_run_id)
        if task.status == "completed":  # answered while the run was stopped: the kept answer
            services.listener("answered", node_id, {"task_id": task.id, "kept": True})
            return task, dict(task.answer or {})
    else:
        key = visit_pause_key(node_id, run_id, visit_id or node_id)
        if task_store.task_by_pause_key(key) is not None:  # a second question in the same visit
            key = visit_pause_key(node_id, run_id, f"{visit_id}-{utcnow().timestamp()}")
        task = task_store.create_task(
            run_id, node_id, title, visit_id=visit_id, description=description, assignee=assignee, fields=fields,
            four_eyes=four_eyes, due_at=utcnow() + timedelta(seconds=timeout) if timeout else None, pause_key=key,
            prefect_flow_run_id=None if own_subflow else pauses.flow_run_id, actor="ergon",
        )
    run_state.mark_paused()
    services.listener("paused", node_id, {"task_id": task.id, "title": title})
    if services.human_task_waiting is not None:  # a supervised run's supervisor is told
        await services.human_task_waiting(node_id, {"task_id": task.id, "title": title, "assignee": assignee})
    mode: WaitMode = "subflow" if own_subflow else "suspend" if pauses.can_suspend(timeout) else "pause"
    key = task.pause_key or visit_pause_key(node_id, run_id, visit_id or node_id)
    proof = humans.needs_proof(task)
    refused = _last_prefect_refusal(task.id)  # a run suspended again after a refusal says why, re-entered
    seconds_left = int(timeout or DEFAULT_WAIT_SECONDS)
    while True:
        if mode == "suspend" and visit_id:
            # Prefect shows the run Suspended before the process has unwound: the visit says so first
            visit_store.mark_visit_suspended(visit_id)
        waiting = pauses.wait_for_answer(AnswerWait(
            task_id=task.id, fields=fields, model_name=f"{node_id}_answer",
            prompt=form_description(title, description, about, task.id, refused=refused, proof=proof),
            key=key, seconds=seconds_left, title=f"{node_id}: {title}"[:120], mode=mode, proof=proof,
        ))
        answer = await _unless_cancelled(waiting, run_state, withdrawn=functools.partial(_settled, run_id, task.id))
        if isinstance(answer, KeptAnswer):  # answered in Ergon; Prefect never handed it over (its API was down)
            if mode == "pause":
                await pauses.release()
            task = task_store.get_task(task.id) or task
            services.listener("answered", node_id, {"task_id": task.id, "kept": True})
            break
        if isinstance(answer, Advanced):  # an admin advanced the run past this task
            if mode == "pause":
                await pauses.release()
            run_state.mark_running_if_idle()
            raise answer
        if answer is None:
            task_store.close_task(task.id, "expired", actor="ergon", reason=f"no answer within {timeout} s")
            run_state.mark_running_if_idle()
            raise TaskExpired(task.id)
        code_sha256 = answer.pop(PROOF_KEY, None)  # never kept: only whose code it is counts
        task = task_store.get_task(task.id) or task  # the row, answered since (it is never deleted while its run waits)
        if task.status == "completed":  # answered in Ergon (CLI, dashboard): checked and recorded there
            break
        try:  # answered through Prefect's own form or API: the same rules, checked now
            task = humans.answer_through_prefect(task.id, answer, code_sha256=code_sha256)
            break
        except humans.TaskRefused as exc:
            refused = exc.reason
        task = task_store.get_task(task.id) or task
        if task.status not in TASK_OPEN:  # closed meanwhile: nothing can take an answer any more
            raise NodeFailed(f"task {task.id} is {task.status}", kind="world")
        # ask again, under a new key (Prefect hands a used key's old answer straight back)
        key = _next_key(key)
        task_store.set_task_pause_key(task.id, key)
        services.listener("refused", node_id, {"task_id": task.id, "reason": refused})
        if task.due_at is not None:
            seconds_left = int((_aware(task.due_at) - utcnow()).total_seconds())
            if seconds_left <= 0:
                task_store.close_task(task.id, "expired", actor="ergon", reason=f"no valid answer within {timeout} s")
                run_state.mark_running_if_idle()
                raise TaskExpired(task.id)
    run_state.mark_running_if_idle()
    return task, dict(task.answer or answer)


def _next_key(key: str) -> str:
    """The pause key after ``key``: ``…-r1``, ``…-r2``, … (lowercase letters, digits, dashes)."""
    base, sep, n = key.rpartition("-r")
    return f"{base}-r{int(n) + 1}" if sep and n.isdigit() else f"{key}-r1"


def _aware(when: Any) -> Any:
    from datetime import UTC

    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def _last_prefect_refusal(task_id: str) -> str | None:
    """The reason of the task's last event, when it is a refused answer through Prefect."""
    events = task_store.task_events(task_id)
    last = events[-1] if events else None
    if last is not None and last.action == "refused" and (last.detail or {}).get("via") == "prefect":
        return (last.detail or {}).get("reason")
    return None


#: How long an answer recorded in Ergon may wait for Prefect to hand it to the waiting flow run
#: before the run takes it from the store itself: longer than the answer path keeps trying
#: (:data:`flows.prefect.resume.SETTLE_SECONDS`), so it only happens when that gave up.
UNDELIVERED_SECONDS = 20.0


class KeptAnswer:
    """The task was answered in Ergon (checked and recorded there) and Prefect did not hand the
    answer to the waiting flow run within :data:`UNDELIVERED_SECONDS` — its API was down when the
    answer came, and came back while the run waited. The run goes on with the stored answer."""


def _settled(run_id: str, task_id: str) -> Advanced | KeptAnswer | None:
    """What the store says ends this wait besides Prefect: an operator's advance that withdrew the
    task, or an answer Prefect never delivered; None while neither."""
    task = task_store.get_task(task_id)
    if task is None:
        return None
    if task.status == "completed" and task.answered_at is not None \
            and (utcnow() - _aware(task.answered_at)).total_seconds() > UNDELIVERED_SECONDS:
        return KeptAnswer()
    return _advanced(run_id, task)


def _advanced(run_id: str, task: Any) -> Advanced | None:
    """The operator's advance that withdrew ``task`` (:func:`flows.runs.controls.advance`), if any."""
    from flows.store import run_events

    task_id = task.id
    if task.status != "cancelled":
        return None
    for event in reversed(run_events.events_for_run(run_id, kind="command")):
        args = (event.args or {}).get("args") or {}
        if event.name == "advance" and event.outcome == "accepted" and args.get("task_id") == task_id:
            return Advanced(str(args["to"]), f"advanced to `{args['to']}` by {event.actor}: {(event.args or {}).get('why')}")
    return None


async def _unless_cancelled(waiting: Awaitable[Any], run_state: Any,
                            withdrawn: Callable[[], Advanced | KeptAnswer | None] = lambda: None) -> Any:
    """Await ``waiting``; give up with :class:`RunCancelled` when the run is cancelled meanwhile
    (Prefect's pause only watches its own flow run's state, not Ergon's store); return what
    ``withdrawn`` found instead (:class:`Advanced` when an admin withdrew the task to advance the
    run, :class:`KeptAnswer` for an answer Prefect never delivered)."""
    advanced: list[Advanced | KeptAnswer] = []

    async def cancelled() -> None:
        while run_state.status() not in ("cancelling", "cancelled"):
            await asyncio.sleep(PAUSE_POLL_SECONDS)
            if (found := withdrawn()) is not None:
                advanced.append(found)
                return

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
    if advanced:
        return advanced[0]
    raise RunCancelled("cancelled while waiting for a person")


def answer_fields(fields: Any, writes: list[str], context: dict[str, Any], schema: dict[str, Any]) -> list[dict[str, Any]]:
    """The task's fields as stored on it, each written field carrying what the run will check
    its value against — its ``context.schema`` property and the bytes left under the context's
    size cap — so that an answer the run would refuse is refused when it is given, with the
    task still open (:func:`flows.humans.validate_answer`)."""
    props = schema.get("properties") if isinstance(schema, dict) else None
    left = MAX_CONTEXT_BYTES - len(json.dumps(context, default=str).encode("utf-8"))
    out = []
    for f in fields:
        d = ir_json(f)
        if d["name"] in writes:
            sub = props.get(d["name"]) if isinstance(props, dict) else None
            if isinstance(sub, dict):
                d["schema"] = sub
            d["context_budget"] = left
        out.append(d)
    return out


async def run(node: PlanNode, context: dict[str, Any], services: Services, visit_id: str | None) -> Effect:
    body = node.body_as(HumanTaskNode)
    spec = body.task
    title, description = humans.render_task(spec, context)
    wait = seconds(body.timeout)
    try:
        task, answer = await ask_person(
            services, visit_id=visit_id, node_id=node.id, title=title, description=description,
            assignee=spec.assignee, fields=answer_fields(spec.fields, node.writes, context, services.context_schema),
            four_eyes=spec.four_eyes, timeout=wait, about=fields_about([spec.title, spec.description], context),
        )
    except TaskExpired:
        if body.on_timeout:
            return Effect(output={"expired": True}, route_to=body.on_timeout)
        raise NodeFailed(f"task expired: `{title}` ({node.id}) got no answer within {body.timeout}",
                         kind="world") from None
    update = {k: v for k, v in answer.items() if k in node.writes}
    return Effect(update=update, output=answer, input={"task_id": task.id, "title": title})
