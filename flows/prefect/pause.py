"""Waiting for a person, in Prefect: the ``Pauses`` port of the human-task body.

The body (:mod:`flows.runtime.bodies.human_task`) decides *how* a run waits; this module does it:

* ``pause`` — ``pause_flow_run`` of the run's own flow run, with a ``RunInput`` model generated
  from the task's fields (:func:`run_input_model`), polling every ``ANSWER_POLL_SECONDS``.
* ``subflow`` — the same pause in a flow run of its own (``ergon-human-task``): Prefect allows one
  pause per flow run at a time, and visits that overlap (foreach items, pipeline nodes) may each
  ask at once; each subflow pauses and resumes independently.
* ``suspend`` — under a deployment, ``suspend_flow_run``: the run goes to ``Suspended``, **the
  process exits** and frees its worker slot; when the task is answered (``ergon tasks answer`` →
  :func:`flows.prefect.resume.resume_answered` → Prefect's resume), Prefect reschedules the same
  flow run and a worker runs the flow body again **from the top**, in a new process. That
  re-entry is safe because the engine continues from the store's checkpoint (completed visits
  are never repeated) and the visit asks again with the **same key**, so Prefect hands back the
  stored answer instead of suspending again.

A task that names an assignee or four-eyes (:func:`flows.humans.needs_proof`) asks, in a last
required field of the form, a one-time answer code (``ergon tasks code``, :mod:`flows.answer_codes`)
— never the approver's personal token: Prefect stores what its form or API sends as the pause's
``…-response`` flow-run input, and copies of it stay in the server's files (its write-ahead log,
free pages, backups, Prefect Cloud) whatever Ergon deletes, so only a code that is spent the
moment it is read may travel there. The field is a ``SecretStr``, so Prefect's form masks it (a
``password`` string, ``writeOnly``). The moment the run reads the input, this module replaces the
code by its SHA-256 for the engine (:func:`_received`; the engine checks whose code it is and
spends it) and rewrites Prefect's stored copy with the code removed (:func:`_forget_code`).

:meth:`PrefectPauses.can_suspend` suspends only a run's *own* flow run started from a deployment
(Prefect refuses suspending subflows and runs without a deployment), and only when the task has
no ``timeout``: a suspended run has no process left to take ``on_timeout`` when the deadline
passes, so timed tasks keep the blocking pause, which routes exactly. The suspension is asked
from inside the node's Prefect task run, so it names the flow run explicitly (Prefect refuses
"suspend the current run" from a task) and then raises :class:`RunSuspended`, Prefect's
``Pause`` signal, which unwinds the task and the flow body and ends the process cleanly.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Iterable
from typing import Annotated, Any, Literal, Optional

import pydantic
from prefect import flow
from prefect.context import FlowRunContext
from prefect.exceptions import Pause, PrefectHTTPStatusError
from prefect.flow_runs import FlowPauseTimeout, apause_flow_run, asuspend_flow_run
from prefect.input import RunInput, keyset_from_paused_state
from prefect.runtime import flow_run

from flows import humans
from flows.runtime.effects import PROOF_KEY, AnswerWait
from flows.settings import ANSWER_POLL_SECONDS
from flows.store import tasks as task_store
from flows.answer_codes import hash_code

log = logging.getLogger("ergon.pause")


class RunSuspended(Pause):
    """The run suspended for a person's answer: its process must end now (Prefect's ``Pause``).

    ``visit_status`` tells the engine to record the visit as ``paused`` rather than failed."""

    visit_status = "paused"


class PrefectPauses:
    """The ``Pauses`` port over Prefect's pause, subflow and suspension (see the module docstring)."""

    def __init__(self, flow_run_id: str | None) -> None:
        self.flow_run_id = flow_run_id

    def can_suspend(self, timeout: float | None) -> bool:
        ctx = FlowRunContext.get()
        run = ctx.flow_run if ctx else None
        return bool(timeout is None and run is not None and run.deployment_id and run.parent_task_run_id is None)

    async def release(self) -> None:
        # the pause left the flow run Paused, and Prefect refuses to start task runs in a flow
        # run that is not running
        from prefect.client.orchestration import get_client
        from prefect.states import Running

        if self.flow_run_id:
            async with get_client() as client:
                await client.set_flow_run_state(self.flow_run_id, Running(), force=True)

    async def wait_for_answer(self, wait: AnswerWait) -> dict[str, Any] | None:
        if wait.mode == "subflow":
            return await _answer_subflow().with_options(flow_run_name=literal_run_name(wait.title))(
                wait.task_id, wait.fields, wait.model_name, wait.prompt, wait.key, wait.seconds, wait.proof)
        if wait.mode == "suspend":
            return await _suspend_for_answer(wait.fields, wait.model_name, wait.prompt, wait.key, wait.proof)
        return await _await_answer(wait.fields, wait.model_name, wait.prompt, wait.key, wait.seconds, wait.proof)


def literal_run_name(text: str) -> str:
    """``text`` as a flow run's name: Prefect formats a name with the flow's parameters
    (``str.format``), so a brace in it — a task title showing a rendered object, ``{'x': 1}`` —
    would fail the run; doubled, it is kept as written."""
    return text.replace("{", "{{").replace("}", "}}")


async def _await_answer(fields: list[dict[str, Any]], model_name: str, prompt: str, key: str,
                        wait: int, proof: bool = False) -> dict[str, Any] | None:
    """Pause the current flow run until resumed with input; the answer, or None on timeout."""
    model = run_input_model(fields, model_name, description=prompt, proof=proof)
    try:
        # Prefect annotates poll_interval as int but only sleeps on it: a fraction of a second works
        run_input: Any = await apause_flow_run(wait_for_input=model, timeout=wait,  # type: ignore[call-overload]
                                               poll_interval=ANSWER_POLL_SECONDS, key=key)
    except FlowPauseTimeout:
        return None
    except (PrefectHTTPStatusError, Pause) as exc:
        if not _reply_lost(exc, key):
            raise
        # the run is Paused (and its form stored): the wait goes on exactly as Prefect's own would
        await _form_stored(model, key, suspended=False)
        run_input = await _resumed_input(model, key, wait)
        if run_input is None:
            return None
    return await _received(run_input, fields if proof else None)


def _reply_lost(exc: PrefectHTTPStatusError | Pause, key: str) -> bool:
    """Whether Prefect's pause (or suspension) keyed ``key`` failed only because a reply was lost
    after the server had done what was asked — the server killed at that moment, a proxy
    dropping the connection. Prefect's client sends the request again once the server is back,
    and the server refuses the second copy:

    * the Paused (or Suspended) state itself: Prefect's transitions are idempotent, so the copy
      is rejected ("already made this state transition") with the run's current state, which
      Prefect's ``propose_state`` raises as ``Pause`` — the state is this pause's own;
    * the form (the ``…-schema`` flow-run input saved once the run is Paused): 409.

    Either way the pause stands; what it had still to do is :func:`_form_stored`'s."""
    if isinstance(exc, Pause):
        state = exc.state
        return bool(state is not None and state.is_paused() and state.state_details.pause_key == key)
    return exc.response.status_code == 409 and exc.request.url.path.endswith("/input")


async def _form_stored(model: type[RunInput], key: str, *, suspended: bool) -> Any:
    """Finish what Prefect's pause did not after a lost reply (:func:`_reply_lost`): the form and
    its description, each saved unless the server holds it already, and the run's current state,
    returned."""
    from prefect.client.orchestration import get_client
    from prefect.input.actions import acreate_flow_run_input
    from prefect.states import Paused, Suspended

    ctx = FlowRunContext.get()
    assert ctx is not None and ctx.flow_run is not None, "a pause waits inside a flow run"
    # the keys are named after the state: ``paused-…`` or ``suspended-…``
    keyset = keyset_from_paused_state((Suspended if suspended else Paused)(pause_key=key))
    try:
        await model.asave(keyset, flow_run_id=ctx.flow_run.id)  # the form, then its description
    except PrefectHTTPStatusError as exc:
        if exc.response.status_code != 409:
            raise
        # the form was there already; its description, saved after it, may not be
        description = model._description if isinstance(model._description, str) else None
        if description:
            try:
                await acreate_flow_run_input(key=keyset["description"], value=description,
                                             flow_run_id=ctx.flow_run.id)
            except PrefectHTTPStatusError as exc2:
                if exc2.response.status_code != 409:
                    raise
    async with get_client() as client:
        return (await client.read_flow_run(ctx.flow_run.id)).state


async def _resumed_input(model: type[RunInput], key: str, wait: int) -> Any:
    """The input of the current flow run's pause ``key`` once the run is resumed; None when it is
    not resumed within ``wait`` seconds."""
    import anyio
    from prefect.client.orchestration import get_client
    from prefect.states import Paused

    ctx = FlowRunContext.get()
    assert ctx is not None and ctx.flow_run is not None, "a pause waits inside a flow run"
    keyset = keyset_from_paused_state(Paused(pause_key=key))
    async with get_client() as client:
        with anyio.move_on_after(wait):
            while True:
                state = (await client.read_flow_run(ctx.flow_run.id)).state
                if state is not None and state.is_running():
                    return await model.aload(keyset)
                await anyio.sleep(ANSWER_POLL_SECONDS)
    return None


@functools.cache
def _answer_subflow() -> Any:
    """The flow a task waits in when several tasks of one run may be open at once."""

    @flow(name="ergon-human-task", persist_result=False, validate_parameters=False, log_prints=False)
    async def ergon_human_task(task_id: str, fields: list[dict[str, Any]], model_name: str, prompt: str, key: str,
                               wait: int, proof: bool = False) -> dict[str, Any] | None:
        """A task's own flow run, paused until its answer comes (one of several open at once)."""
        task_store.set_task_flow_run(task_id, str(flow_run.id))
        return await _await_answer(fields, model_name, prompt, key, wait, proof)

    return ergon_human_task


async def _suspend_for_answer(fields: list[dict[str, Any]], model_name: str, prompt: str, key: str,
                              proof: bool = False) -> dict[str, Any]:
    """Suspend the run until the task keyed ``key`` is answered; the answer when it already was."""
    ctx = FlowRunContext.get()
    if ctx is None or ctx.flow_run is None:  # suspending is decided by can_suspend, inside a flow run
        raise RuntimeError("a run can only suspend from inside its flow run")
    model = run_input_model(fields, model_name, description=prompt, proof=proof)
    # The key fired before (this is the re-entry after the resume): Prefect rejects the new
    # suspension and returns the input stored with the resume.
    request = getattr(ctx, "flow_run_suspension_request", None)
    try:
        run_input: Any = await asuspend_flow_run(wait_for_input=model, flow_run_id=ctx.flow_run.id, key=key)
    except (PrefectHTTPStatusError, Pause) as exc:
        if not _reply_lost(exc, key):
            raise
        # the run is Suspended (and its form stored, see _await_answer): suspend as Prefect would
        state = await _form_stored(model, key, suspended=True)
        if request is not None:
            request.mark_requested(state)
        raise RunSuspended("suspended until the task is answered", state=state) from None
    if run_input is not None:
        return await _received(run_input, fields if proof else None)
    state = request.get_state() if request is not None else None
    raise RunSuspended("suspended until the task is answered", state=state)


# --- the answer code -----------------------------------------------------------------------------

#: What replaces the code in Prefect's stored copy of the input.
REDACTED = "(removed by Ergon)"


async def _received(run_input: Any, proof_fields: list[dict[str, Any]] | None) -> dict[str, Any]:
    """The answer of a resumed pause, for the engine. For a form that asked an answer code
    (``proof_fields`` are its task's fields), the code is replaced by its SHA-256 under
    :data:`~flows.runtime.effects.PROOF_KEY` at once — the code goes no further than this
    function, so nothing of Ergon's can log or record it — and Prefect's stored copy of the
    input (the ``…-response`` flow-run input) is rewritten without it."""
    if proof_fields is None:
        return input_to_answer(run_input)
    key = humans.proof_field(proof_fields)
    secret = getattr(run_input, key, None)
    code = secret.get_secret_value() if isinstance(secret, pydantic.SecretStr) else None
    answer = input_to_answer(run_input)
    answer.pop(key, None)
    if code and code != humans.ERGON_CHECKED:
        answer[PROOF_KEY] = hash_code(code)
        await _forget_code(run_input, key)
    return answer


async def _forget_code(run_input: Any, key: str) -> None:
    """Rewrite Prefect's stored copy of the input without the code (best effort, and the code is
    spent either way: this keeps it out of Prefect's UI and API, not out of its files)."""
    from prefect.input.actions import acreate_flow_run_input, adelete_flow_run_input

    meta = getattr(run_input, "metadata", None)
    if meta is None:
        return
    stored = run_input.model_dump(mode="json", by_alias=True)
    stored[key] = REDACTED
    try:
        await adelete_flow_run_input(key=meta.key, flow_run_id=meta.receiver)
        await acreate_flow_run_input(key=meta.key, value=stored, flow_run_id=meta.receiver)
    except Exception:  # noqa: BLE001 - never fail an answer for it; say so without the code
        log.warning("could not remove the answer code from Prefect's stored input %s of flow run %s",
                    meta.key, meta.receiver)


# --- the form Prefect shows and validates --------------------------------------------------------


def _python_type(f: dict[str, Any]) -> Any:
    if f["type"] == "select":
        options = tuple(f.get("options") or ())
        if not options:
            raise ValueError(f"select field {f['name']!r} has no options")
        return Literal[options]  # JSON Schema: an enum
    if f["type"] == "integer":  # bounded as every channel bounds it (flows.humans.MAX_WHOLE_ANSWER)
        return Annotated[int, pydantic.Field(ge=-humans.MAX_WHOLE_ANSWER, le=humans.MAX_WHOLE_ANSWER)]
    return {"text": str, "string": str, "boolean": bool, "number": float}[f["type"]]


#: Appended to the title of a required field: Prefect's form marks only the optional ones.
REQUIRED_MARK = " (required)"


def field_title(f: dict[str, Any]) -> str:
    """A field's title in Prefect's form: its label (else its name), marked when required."""
    return (f.get("label") or f["name"]) + (REQUIRED_MARK if f["required"] else "")


def field_help(f: dict[str, Any]) -> str | None:
    """A field's help text in Prefect's form (markdown): its description, and for a select whose
    options have labels, each option's value with its label.

    Prefect's select (an ``enum``) shows the values only. Labelled alternatives — ``oneOf`` of
    ``const`` + ``title`` — were tried: both of Prefect's UIs draw them as a choice between
    *schemas* (buttons, then an input for the constant that stays empty, and Prefect then refuses
    the answer as missing), not as a select, so the values stay an enum and the labels are here."""
    parts = [f["description"]] if f.get("description") else []
    if f.get("option_labels"):
        parts.append("Options: " + " · ".join(
            f"**{value}**" + (f" ({label})" if label and label != value else "")
            for value, label in f["option_labels"].items()))
    return " — ".join(parts) or None


def run_input_model(fields: Iterable[Any] | None, name: str, *, description: str | None = None,
                    proof: bool = False) -> type:
    """A ``prefect.input.RunInput`` subclass for a task's fields, for ``pause_flow_run(
    wait_for_input=...)``: select → ``Literal`` (an enum), text/string → str, boolean, number →
    float, integer → int; required fields have no default, optional ones the same default
    :func:`flows.humans.validate_answer` applies. In Prefect's form each field is titled with its
    label and marked when required (:func:`field_title`), with its help text and option labels
    below (:func:`field_help`). Unknown keys are refused (RunInput forbids extras).
    ``description`` (markdown: the task, the context it is about, a link to Ergon's inbox) is
    shown above the form.

    A field whose name is not a usable Python attribute (``class``, ``json``, ``my-field``, …)
    gets a safe attribute name with the field name as alias: read answers back with
    :func:`input_to_answer`, which uses the field names.

    With ``proof`` (the task names an assignee or four-eyes), a last, required field asks the
    one-time answer code (:func:`flows.humans.proof_field`): a ``SecretStr``, so its schema is a
    ``password`` string (``writeOnly``) that Prefect's form masks.
    """
    reserved = set(dir(RunInput))
    definitions: dict[str, Any] = {}
    for i, f in enumerate(humans.normalize_fields(fields)):
        py_type = _python_type(f)
        text, title = field_help(f), field_title(f)
        attr, alias = f["name"], None
        if not attr.isidentifier() or attr.startswith(("_", "model_")) or attr in reserved \
                or attr in ("metadata", "keyset_from_type"):
            attr, alias = f"field_{i}", f["name"]
        if f["required"]:
            definitions[attr] = (py_type, pydantic.Field(..., title=title, description=text, alias=alias))
        else:
            default, error = humans.default_of(f)
            if error:
                raise ValueError(error)
            if default is humans.OMITTED:  # left out: the form sends null, the answer omits it
                default = None
            # null only where the field has no natural empty value (select, number, integer
            # without a default): a text box or a checkbox always sends something.
            field_type = Optional[py_type] if default is None else py_type
            definitions[attr] = (field_type, pydantic.Field(default, title=title, description=text, alias=alias))
    if proof:
        key = humans.proof_field(fields)
        definitions[key] = (pydantic.SecretStr, pydantic.Field(
            ..., title="Your answer code" + REQUIRED_MARK,
            description="A one-time code for this task, from: ergon tasks code TASK_ID (the task's id is above; valid "
                        "15 minutes, for one answer). It proves who answers, and Ergon checks that "
                        "you may (the assignee, a member of its group, an admin; with four-eyes, not the run's "
                        "starter). Never type your personal token here: Prefect keeps what this form sends, so Ergon revokes "
                        "a token it finds here."))
    class_name = re.sub(r"\W", "_", name) or "TaskInput"
    if class_name[0].isdigit():
        class_name = "_" + class_name
    model = pydantic.create_model(class_name, __base__=RunInput, **definitions)
    return model.with_initial_data(description=description) if description else model


def input_to_answer(run_input: Any) -> dict[str, Any]:
    """The answer dict (keyed by field name) of an instance of a :func:`run_input_model` model."""
    # a null is an optional field left empty in the form: not given, as validate_answer omits it
    return {k: v for k, v in run_input.model_dump(by_alias=True).items() if v is not None}
