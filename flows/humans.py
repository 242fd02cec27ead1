"""Human tasks: who may see, take and answer them, what a valid answer is, and the Prefect pause
form generated from a task's fields.

One set of rules for every way in — the CLI (``ergon tasks``), the dashboard and the engine's
handling of Prefect's own resume form — so that all of them end in the same state (PRODUCT §5):

* **Visibility** — a task is visible to its assignee user, to the members of its ``group:<g>``,
  to anyone when it is unassigned, and to admins. :func:`can_see` is the same rule the store
  applies in ``task_store.list_tasks(visible_to=...)``, so a listed task is always a showable one.
* **Answering** — whoever may see a task may take (claim) and answer it, except that
  ``four_eyes: true`` refuses the person who started the run, admins included (the point of a
  second pair of eyes is that it is not the first pair). A task someone has taken can only be
  answered by them, or by an admin (admins may unblock a queue when its holder is away).
* **Answers** are validated against the fields (:func:`validate_answer`) *before* anything
  resumes; a refused answer changes nothing but the audit trail. A task is answered once.
* **Who answers** is proven by the channel: the CLI's identity (:mod:`flows.identity`: a token,
  a password, the OS user), the dashboard's sign-in, and for Prefect's own form or API a
  one-time answer code in the form (:mod:`flows.answer_codes`), checked when the run resumes
  (:func:`answer_through_prefect`) — required where the task names an assignee or four-eyes
  (:func:`needs_proof`); an unassigned task is open to anyone who reaches Prefect.

Every claim, answer and refusal is a ``task_events`` row (the store writes ``created``,
``claimed`` and ``answered``; this module adds ``refused`` with the reason).

This module never touches Prefect at run time, nor decides whether a task's run can still take
an answer: the channels answer through the run owner (:func:`flows.runs.answers.answer`), which
refuses a task whose run is over and hands a recorded answer to the run (Prefect's resume, or a
resume from the checkpoint). :func:`pause_key` is the key a run pauses under, and
:func:`flows.prefect.pause.run_input_model` builds Prefect's form from the same fields.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from flows.errors import TaskError
from flows.schema import schema_errors
from flows.store import people as people_store
from flows.store import runs as run_store
from flows.store import tasks as task_store
from flows.store.errors import TaskConflict
from flows.store.models import TASK_OPEN, HumanTask, TaskChannel, User

__all__ = [
    "ERGON_CHECKED", "PREFECT_ACTOR", "PROOF_FIELD", "Actor", "AnswerResult", "TaskExpired", "TaskNotFound", "TaskRefused", "actor", "answer",
    "answer_through_prefect", "can_answer", "can_claim", "can_see", "claim", "needs_proof", "normalize_fields",
    "on_answered", "pause_key", "proof_field", "refuse", "render_task", "task_dict", "validate_answer",
]

log = logging.getLogger("ergon.humans")

#: Called with the completed task after an answer is recorded, in registration order (a notifier;
#: a benchmark registers :func:`flows.prefect.resume.resume_answered` to answer without the run
#: owner). A callback that raises does not undo the answer (it is recorded and final): the
#: error is logged and returned in :attr:`AnswerResult.hook_errors`, so the caller can say that the
#: run did not resume and the engine can retry from the stored answer.
on_answered: list[Callable[[HumanTask], None]] = []

FIELD_TYPES = ("select", "text", "string", "boolean", "number", "integer")
#: The largest whole-number answer either way: Prefect's API serializes with orjson, which
#: refuses integers beyond 64 bits (its server answers 500 to a resume carrying one).
MAX_WHOLE_ANSWER = 2**63 - 1
_TRUE, _FALSE = frozenset({"true", "yes"}), frozenset({"false", "no"})


class TaskRefused(TaskError):
    """An action on a task that the rules refuse; ``reason`` says why, ``errors`` lists each
    problem of a refused answer. Nothing changed except a ``refused`` audit event."""

    def __init__(self, reason: str, *, task_id: str | None = None, errors: list[str] | None = None):
        super().__init__(reason)
        self.reason, self.task_id, self.errors = reason, task_id, list(errors or [])


class TaskNotFound(TaskError, LookupError):
    pass


class TaskExpired(TaskError):
    """Nobody answered within the task's timeout (the task is closed as expired)."""


# --- people ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Actor:
    """A person as the rules see them. Build one with :func:`actor` (reads the store) or directly
    (the dashboard can cache it for a session)."""

    name: str
    groups: frozenset[str] = frozenset()
    is_admin: bool = False


def actor(user: str | User | Actor) -> Actor:
    """The :class:`Actor` for a user name or row. A name the store does not know is a person
    with no group and no admin right: they can still act on unassigned tasks and on tasks
    assigned to that exact name (the CLI falls back to the OS user)."""
    if isinstance(user, Actor):
        return user
    name = user.name if isinstance(user, User) else user
    row = user if isinstance(user, User) else people_store.get_user(name)
    return Actor(name=name, groups=frozenset(people_store.groups_of(name)) if row is not None else frozenset(),
                 is_admin=bool(row is not None and row.is_admin))


def _group(assignee: str | None) -> str | None:
    return assignee[len("group:"):] if assignee and assignee.startswith("group:") else None


def can_see(task: HumanTask, user: str | User | Actor) -> bool:
    """Whether ``user`` may see ``task`` (and so take it): assignee, group member, anyone when
    unassigned, admins. Same rule as ``task_store.list_tasks(visible_to=...)``."""
    who = actor(user)
    if who.is_admin or not task.assignee or task.assignee == who.name:
        return True
    group = _group(task.assignee)
    return group is not None and group in who.groups


def _not_yours(task: HumanTask, who: Actor) -> str:
    group = _group(task.assignee)
    if group is not None:
        return (f"task {task.id} is assigned to group {group}, and {who.name} is not a member "
                f"(an admin adds them: `ergon users add {who.name} --group {group}`)")
    return f"task {task.id} is assigned to {task.assignee}, not {who.name}: only they (or an admin) may answer it"


def _closed(task: HumanTask) -> str:
    if task.status == "completed":
        at = f" at {task.answered_at.isoformat(timespec='seconds')}" if task.answered_at else ""
        return f"task {task.id} was already answered by {task.answered_by}{at}"
    return f"task {task.id} is {task.status}"


def _four_eyes(task: HumanTask, who: Actor, run_started_by: str | None) -> str | None:
    if task.four_eyes and run_started_by is not None and run_started_by == who.name:
        return f"four-eyes: {who.name} started run {task.run_id} and may not answer its task {task.id}"
    return None


def can_claim(task: HumanTask, user: str | User | Actor, run_started_by: str | None) -> tuple[bool, str]:
    """Whether ``user`` may take ``task``; ``(False, reason)`` when not. Taking a task one already
    holds is allowed (a no-op); taking one somebody else holds is not, even for an admin."""
    who = actor(user)
    if task.status not in TASK_OPEN:
        return False, _closed(task)
    if not can_see(task, who):
        return False, _not_yours(task, who)
    if (reason := _four_eyes(task, who, run_started_by)) is not None:
        return False, reason  # taking a task one may not answer would only block the queue
    if task.claimed_by and task.claimed_by != who.name:
        return False, f"task {task.id} was already taken by {task.claimed_by}"
    return True, ""


def can_answer(task: HumanTask, user: str | User | Actor, run_started_by: str | None) -> tuple[bool, str]:
    """Whether ``user`` may answer ``task`` of a run started by ``run_started_by``;
    ``(True, "")`` or ``(False, reason)``."""
    who = actor(user)
    if task.status not in TASK_OPEN:
        return False, _closed(task)
    if not can_see(task, who):
        return False, _not_yours(task, who)
    if (reason := _four_eyes(task, who, run_started_by)) is not None:
        return False, reason
    if task.claimed_by and task.claimed_by != who.name and not who.is_admin:
        return False, f"task {task.id} was taken by {task.claimed_by}; only they (or an admin) may answer it"
    return True, ""


# --- fields and answers ------------------------------------------------------------------------


def normalize_fields(fields: Iterable[Any] | None) -> list[dict[str, Any]]:
    """Task fields as plain dicts with every key present, from IR ``TaskField`` objects or the
    JSON stored on a task."""
    result = []
    for f in fields or []:
        d = f.model_dump() if hasattr(f, "model_dump") else dict(f)
        result.append({"name": d["name"], "type": d.get("type") or "string", "required": bool(d.get("required")),
                       "options": d.get("options"), "label": d.get("label"), "description": d.get("description"),
                       "default": d.get("default"), "option_labels": d.get("option_labels"),
                       # what the run checks the value against when it writes it (set at task creation)
                       "schema": d.get("schema"), "context_budget": d.get("context_budget")})
    return result


def _empty(f: dict[str, Any]) -> Any:
    """The value of an optional field left empty: what a form sends for an empty text box or an
    unticked checkbox. Text fields get "" rather than None so that a context field declared as a
    string stays a string; fields with no natural empty value get None."""
    return {"text": "", "string": "", "boolean": False}.get(f["type"])


#: An optional field left out that has neither a default nor a natural empty value: not written.
OMITTED = object()


def default_of(f: dict[str, Any]) -> tuple[Any, str | None]:
    """The value of an optional field the answer leaves out: its ``default`` (as the field's
    type), else its empty value ("" for text, false for a boolean), else :data:`OMITTED` — a
    number or a date left out is not written at all (a ``null`` would break the field's type)."""
    if f["default"] is None:
        empty = _empty(f)
        return (OMITTED if empty is None else empty), None
    value, error = _coerce(f, f["default"])
    return value, (f"{error} (the field's default)" if error else None)


def _same(a: Any, b: Any) -> bool:
    # bool is an int in Python (True == 1): a select with options [1, 2] must not accept True.
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    return type(a) is type(b) and a == b


def _coerce(f: dict[str, Any], value: Any) -> tuple[Any, str | None]:
    """``value`` as the field's type, or an error. Strings are parsed for non-text types, because
    the CLI (``--set f=v``) and HTML forms only have strings."""
    name, kind = f["name"], f["type"]
    if kind == "select":
        options = list(f.get("options") or [])
        for option in options:
            if _same(option, value):
                return option, None
        if isinstance(value, str):
            text = value.strip()
            for option in options:  # "2" for option 2, "true" for option true
                if (isinstance(option, str) and option == text) or json.dumps(option) == text:
                    return option, None
        shown = ", ".join(str(o) for o in options)
        return None, f"{name}: {value!r} is not one of: {shown}"
    if kind in ("text", "string"):
        if isinstance(value, str):
            return value, None
        return None, f"{name}: expected text, got {type(value).__name__} {value!r}"
    if kind == "boolean":
        if isinstance(value, bool):
            return value, None
        if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
            return value.strip().lower() in _TRUE, None
        return None, f"{name}: expected true or false (or yes/no), got {value!r}"
    if kind == "number":
        number: float | None = None
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            number = float(value)
        elif isinstance(value, str):
            try:
                number = float(value.strip())
            except ValueError:
                number = None
        if number is None or not math.isfinite(number):
            return None, f"{name}: expected a number, got {value!r}"
        return number, None
    if kind == "integer":
        whole: int | None = None
        if isinstance(value, int) and not isinstance(value, bool):
            whole = value
        elif isinstance(value, float) and value.is_integer():
            whole = int(value)
        elif isinstance(value, str) and re.fullmatch(r"\s*[+-]?\d+\s*", value):
            whole = int(value)
        if whole is None:
            return None, f"{name}: expected a whole number, got {value!r}"
        if abs(whole) > MAX_WHOLE_ANSWER:
            return None, (f"{name}: {whole} is too large: a whole-number answer is at most {MAX_WHOLE_ANSWER:,} "
                          "either way (Prefect's API carries 64-bit integers); use a text field for longer digits")
        return whole, None
    return None, f"{name}: unknown field type {kind!r}"


def validate_answer(fields: Iterable[Any] | None, answer: Any) -> tuple[dict[str, Any], list[str]]:
    """Check ``answer`` against the task's fields; ``(clean_answer, errors)``.

    The clean answer has the given values converted to the field's type (strings parsed, see
    :func:`_coerce`), then each missing optional field's ``default``, or its empty value (``""``
    for text, ``false`` for a boolean); other optional fields left out are not in it. It is
    exactly what the generated :func:`run_input_model` produces, so the CLI, the dashboard and
    Prefect's form give the same context. ``errors`` lists every problem (required fields missing
    or blank, values not among a select's options, wrong types, unknown keys, and what the run
    itself would refuse: a value against the context schema of the field it writes, an answer
    larger than what is left of the context's size cap); only an empty list is an answer.
    """
    specs = normalize_fields(fields)
    if not isinstance(answer, Mapping):
        return {}, [f"the answer must be an object of field values, not {type(answer).__name__}"]
    errors: list[str] = []
    known = {f["name"] for f in specs}
    for key in answer:
        if key not in known:
            errors.append(f"{key}: unknown field (fields: {', '.join(f['name'] for f in specs) or 'none'})")
    clean: dict[str, Any] = {}
    for f in specs:
        name, value = f["name"], answer.get(f["name"])
        blank = value is None or (isinstance(value, str) and not value.strip())
        if blank and f["required"]:
            errors.append(f"{name}: required")
            continue
        if blank and not (isinstance(value, str) and f["type"] in ("text", "string")):
            coerced, error = default_of(f)
        else:
            coerced, error = _coerce(f, value)
        if error is not None:
            errors.append(error)
        elif coerced is not OMITTED:
            if f.get("schema") and not blank:
                errors += [f"{name}: {problem.split(': ', 1)[-1]}" for problem in schema_errors(f["schema"], coerced)]
            clean[name] = coerced
    budgets = [f["context_budget"] for f in specs if isinstance(f.get("context_budget"), int)]
    if budgets and not errors:
        size = len(json.dumps(clean, default=str).encode("utf-8"))
        if size > min(budgets):
            errors.append(f"the answer is {size:,} bytes, more than the {max(0, min(budgets)):,} left of the run's "
                          "context (capped at 64 KB): shorten it, or attach long text as a document")
    return clean, errors


# --- the pause key -------------------------------------------------------------------------------


def pause_key(node_id: str, visit_sequence: int, run_id: str | None = None) -> str:
    """The key of a human task's pause: unique per visit, because Prefect hands the previous
    answer straight back when a key is reused (a loop through the same task would never pause
    again). Prefect accepts only lowercase letters, digits and dashes, so the node id is
    slugged, with a short hash of it when slugging changed it (``a_b`` and ``a-b`` stay apart).
    ``run_id`` makes the key unique across runs too (``task_store.task_by_pause_key`` is global)."""
    slug = re.sub(r"[^a-z0-9]+", "-", node_id.lower()).strip("-") or "task"
    if slug != node_id:
        slug += "-" + hashlib.sha256(node_id.encode()).hexdigest()[:6]
    key = f"{slug}-{int(visit_sequence)}"
    if run_id:
        key = re.sub(r"[^a-z0-9]+", "-", run_id.lower()).strip("-") + "-" + key
    return key


# --- rendering ---------------------------------------------------------------------------------


def render_task(task_spec: Any, context: Mapping[str, Any]) -> tuple[str, str | None]:
    """The task's title and description rendered against the run's context, as stored on the
    task when it is created. A placeholder the context lacks raises ``jinja2.UndefinedError``
    (the checker's definite-assignment pass makes that a definition bug, not a user error)."""
    from compiler.templates import render

    get = task_spec.get if isinstance(task_spec, Mapping) else lambda k: getattr(task_spec, k, None)
    title, description = get("title") or "", get("description")
    return render(title, context), (render(description, context) if description else description)


# --- actions -----------------------------------------------------------------------------------


@dataclass
class AnswerResult:
    """A recorded answer: the completed task, and the errors of :data:`on_answered` callbacks
    (empty when the run was handed the answer without trouble)."""

    task: HumanTask
    hook_errors: list[str] = field(default_factory=list)

    @property
    def answer(self) -> dict[str, Any]:
        return self.task.answer


def _load(task_id: str) -> tuple[HumanTask, str | None]:
    task = task_store.get_task(task_id)
    if task is None:
        raise TaskNotFound(f"no task {task_id}")
    run = run_store.get_run(task.run_id)
    return task, (run.started_by if run is not None else None)


def refuse(task_id: str, who: Actor, action: str, reason: str, *, errors: list[str] | None = None,
           detail: dict[str, Any] | None = None) -> TaskRefused:
    """Record a ``refused`` event for ``who``'s ``action`` and return the :class:`TaskRefused` to raise."""
    task_store.record_task_event(task_id, "refused", actor=who.name,
                                 detail={"action": action, "reason": reason, **({"errors": errors} if errors else {}),
                                         **(detail or {})})
    return TaskRefused(reason, task_id=task_id, errors=errors)


def claim(task_id: str, user: str | User | Actor) -> HumanTask:
    """``user`` takes the task (pending → in progress, ``claimed`` event). Raises
    :class:`TaskRefused` (and records why) when the rules say no, :class:`TaskNotFound`."""
    who = actor(user)
    task, started_by = _load(task_id)
    ok, reason = can_claim(task, who, started_by)
    if not ok:
        raise refuse(task_id, who, "claim", reason)
    try:
        return task_store.claim_task(task_id, who.name)
    except TaskConflict as exc:  # somebody else was faster
        raise refuse(task_id, who, "claim", str(exc)) from None


def answer(task_id: str, user: str | User | Actor, raw_answer: Any, via: TaskChannel = "cli", *,
           hooks: bool = True) -> AnswerResult:
    """Answer a task as ``user`` through channel ``via`` (cli, dashboard, prefect, api).

    In this order: may ``user`` answer it (open, visible, four-eyes, not taken by someone
    else)? is the answer valid? Any "no" raises :class:`TaskRefused` with the reason and leaves
    the task as it was (a ``refused`` event is the only write). Otherwise the clean answer,
    ``answered_by``, ``answered_at`` and ``via`` are recorded, the task is completed, and (with
    ``hooks``) the :data:`on_answered` callbacks run.
    """
    who = actor(user)
    task, started_by = _load(task_id)
    ok, reason = can_answer(task, who, started_by)
    if not ok:
        raise refuse(task_id, who, "answer", reason, detail={"via": via})
    clean, errors = validate_answer(task.fields, raw_answer)
    if errors:
        raise refuse(task_id, who, "answer", "invalid answer: " + "; ".join(errors), errors=errors,
                      detail={"via": via})
    try:
        task = task_store.answer_task(task_id, clean, answered_by=who.name, answered_via=via)
    except TaskConflict as exc:  # answered or closed meanwhile, by another channel
        raise refuse(task_id, who, "answer", str(exc), detail={"via": via}) from None
    hook_errors: list[str] = []
    for hook in list(on_answered) if hooks else []:
        try:
            hook(task)
        except Exception as exc:  # the answer stands; the caller reports that the run did not resume
            log.exception("on_answered callback %r failed for task %s", hook, task_id)
            hook_errors.append(f"{getattr(hook, '__name__', hook)}: {exc}")
    return AnswerResult(task, hook_errors)


#: Who answered through Prefect's form, when the task asks no proof (unassigned, no four-eyes).
PREFECT_ACTOR = "prefect"


#: The key of the one-time answer code in Prefect's form, unless a field of the task has that name.
PROOF_FIELD = "answer_code"
#: What Ergon sends in that field when it hands Prefect an answer it checked and recorded itself
#: (the CLI, the dashboard): the engine then takes the store's answer and ignores the field, so
#: typing this into Prefect's form proves nothing.
ERGON_CHECKED = "checked-by-ergon"


def proof_field(fields: Iterable[Any] | None) -> str:
    """The key of the answer code in the Prefect form of a task with these fields."""
    names = {f["name"] for f in normalize_fields(fields)}
    key = PROOF_FIELD
    while key in names:
        key += "_"
    return key


def needs_proof(task: HumanTask) -> bool:
    """Whether an answer through Prefect's own form or API must prove who gives it (a one-time
    answer code, :mod:`flows.answer_codes`): when the task names an assignee or ``four_eyes`` — then who
    answers matters. An unassigned task is anyone's, so anyone who reaches Prefect may answer."""
    return bool(task.assignee) or bool(task.four_eyes)


def answer_code(task_id: str, user: str | User | Actor) -> Any:
    """A one-time code for ``user`` to answer ``task_id`` through Prefect's form
    (:func:`flows.answer_codes.issue`), given only when they may answer it now (the rules of
    :func:`can_answer`) and the form asks one (:func:`needs_proof`); raises :class:`TaskNotFound`
    and :class:`TaskRefused` (recorded, like every refusal)."""
    from flows import answer_codes

    task, run_started_by = _load(task_id)
    who = actor(user)
    if not needs_proof(task):
        raise refuse(task_id, who, "code", f"task {task_id} names no assignee and no four-eyes: Prefect's form asks "
                     "no code for it")
    allowed, reason = can_answer(task, who, run_started_by)
    if not allowed:
        raise refuse(task_id, who, "code", reason)
    return answer_codes.issue(task.id, who.name)


def answer_through_prefect(task_id: str, raw_answer: Any, *, code_sha256: str | None) -> HumanTask:
    """Record an answer that came through Prefect's own resume form or API, as the engine
    receives it when the run resumes: the same rules as every other channel.

    A task that :func:`needs_proof` is answered by the person whose one-time answer code's
    SHA-256 the form's reader passed (``code_sha256``, :mod:`flows.answer_codes`, spent here): no
    code, or one that is unknown, for another task, used or expired, is refused (a personal token
    typed there is refused and revoked); then :func:`answer` applies the rules to that user
    (assignee or group member, four-eyes, taken by someone else) and checks the answer. Other
    tasks are answered by :data:`PREFECT_ACTOR` under the same checks. Every refusal is a
    ``refused`` event (``via: prefect``; who, when the code proved someone) and raises
    :class:`TaskRefused` — the engine then asks again in Prefect with the reason. No code is
    ever recorded; the callbacks of :data:`on_answered` do not run (the run has the answer)."""
    from flows import answer_codes

    task = task_store.get_task(task_id)
    if task is None:
        raise TaskNotFound(f"no task {task_id}")
    who: str = PREFECT_ACTOR
    if code_sha256 or needs_proof(task):
        anonymous = Actor(PREFECT_ACTOR)
        if not code_sha256:
            raise refuse(task_id, anonymous, "answer", f"task {task_id} is assigned to {task.assignee or 'anyone'}"
                         + (" with four-eyes" if task.four_eyes else "") + ": an answer through Prefect needs a "
                         f"one-time code from `ergon tasks code {task_id}`", detail={"via": "prefect"})
        try:
            who = answer_codes.redeem(code_sha256, task_id)
        except answer_codes.CodeRefused as exc:
            raise refuse(task_id, anonymous, "answer", f"the answer code was refused: {exc}",
                         detail={"via": "prefect"}) from None
    return answer(task_id, who, raw_answer, via="prefect", hooks=False).task


def task_dict(task: HumanTask) -> dict[str, Any]:
    """A task as JSON-ready data (CLI ``--json``, dashboard)."""
    return task.model_dump(mode="json")
