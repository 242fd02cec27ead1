"""Human tasks by email: the task's email with a reply address of its own, and reading a reply.

With ``ask_by_email: true`` in the email configuration, a new human task — an agent's
``ask_user``, a ``human_task`` node, a ``trigger: user`` choice — is emailed (the ``task.created``
moment, :mod:`flows.moments`) to its assignee's address, or to the addresses of its group's
members, as ``addresses`` in ``tools/email.yaml`` maps them; an unassigned task, or one whose
people have no address there, is not emailed. Each email is sent separately, with
``Reply-To: r+<task id>.<token>@<reply_domain>``: the token is 160 random bits, of which the
store keeps only the SHA-256 (in the task's ``emailed`` audit event). A reply reaches
``ergon serve``'s listener (:mod:`flows.triggers.email`), which takes it as an answer only when
the address carries the token of that task (:func:`task_of_reply_address`), and then only from
a sender whose address maps to a user the task's rules let answer (:func:`flows.humans.answer`).

A reply's text (:func:`answer_from_reply`): what precedes the quoted original (``>`` lines,
``On … wrote:``, a ``-- `` signature) is read; a line ``name: value`` sets the field ``name``;
the other lines together are the answer of the task's free-text field (``answer`` for
``ask_user``, else its only text field) unless a line set that field. The answer is then checked like any other.

The email is sent in the process that creates the task, before the run pauses; a sending that
fails is logged and leaves the task open to the other channels.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import re
import secrets
from email.utils import parseaddr
from typing import Any

from flows.email import message
from flows.email.config import EmailConfig, current
from flows.settings import dashboard_url
from flows.store import people as people_store
from flows.store import tasks as task_store
from flows.store.models import HumanTask

log = logging.getLogger("ergon.email")

#: The local part of a reply address: r+<32 hex task id>.<32 base32 token> (67 characters would
#: break RFC 5321's 64, so the prefix is one letter, as the seed's ``r+{routeKey}``).
_REPLY = re.compile(r"^r\+(?P<task>[0-9a-f]{32})\.(?P<token>[a-z2-7]{32})$")


def _token() -> str:
    return base64.b32encode(secrets.token_bytes(20)).decode("ascii").lower()


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("ascii")).hexdigest()


def recipients(task: HumanTask, config: EmailConfig) -> dict[str, str]:
    """user → address of the people a task is emailed to (those with an address configured)."""
    assignee = task.assignee or ""
    if assignee.startswith("group:"):
        people = people_store.members_of(assignee[len("group:"):])
    else:
        people = [assignee] if assignee else []
    return {p: a for p in people if (a := config.address_of(p)) is not None}


def _body(task: HumanTask, fields: list[dict[str, Any]]) -> str:
    lines = [f"# {task.title}", ""]
    if task.description:
        lines += [task.description, ""]
    free = free_text_field(fields)
    named = [f for f in fields if f["name"] != free]
    lines.append("**Reply to this email to answer.**"
                 + (" The text of your reply is the answer." if free else ""))
    if named:
        lines += ["", "Give these fields each on a line of its own, as `name: value`:", ""]
        for f in named:
            what = f["type"] + (f" — one of: {', '.join(str(o) for o in f['options'])}" if f.get("options") else "")
            label = f" ({f['label']})" if f.get("label") and f["label"] != f["name"] else ""
            lines.append(f"* `{f['name']}`{label}: {what}" + (" — required" if f["required"] else ""))
    lines += ["", f"Only a reply from your own address is taken. The task is also in Ergon's inbox: "
                  f"{dashboard_url()} (task `{task.id}`)."]
    return "\n".join(lines) + "\n"


def free_text_field(fields: list[dict[str, Any]]) -> str | None:
    """The field a reply's free text answers: ``answer`` when the task has it, else its only text
    field, else None (every field is then given as ``name: value``)."""
    names = [f["name"] for f in fields]
    if "answer" in names:
        return "answer"
    texts = [f["name"] for f in fields if f["type"] in ("text", "string")]
    return texts[0] if len(texts) == 1 else None


def send_task_email(task: HumanTask, config: EmailConfig) -> list[str]:
    """Email ``task`` to its people with a fresh reply address; the addresses it went to."""
    from flows.humans import normalize_fields

    people = recipients(task, config)
    if not people:
        log.info("task %s: no address configured for %s; not emailed", task.id, task.assignee or "an unassigned task")
        return []
    token = _token()
    reply_to = f"r+{task.id}.{token}@{config.reply_domain}"
    body = _body(task, normalize_fields(task.fields))
    # the digest is stored before sending: a reply that arrives at once finds it
    task_store.record_task_event(task.id, "emailed", actor="ergon",
                                 detail={"to": sorted(people.values()), "reply_token_sha256": _digest(token)})
    sent = []
    for user, address in sorted(people.items()):
        msg = message.compose(config, to=[address], subject=f"[Ergon] {task.title}"[:200], markdown=body,
                              reply_to=reply_to)
        try:
            message.send(config, msg)
            sent.append(address)
        except message.EmailError as exc:
            log.warning("task %s: the email to %s (%s) was not sent: %s", task.id, user, address, exc)
    return sent


def on_task_created(task: HumanTask) -> None:
    """The ``task.created`` moment: email the task when the configuration says so."""
    config = current(required=False)
    if config is None or not config.ask_by_email or not config.reply_domain:
        return
    send_task_email(task, config)


def task_of_reply_address(recipient: str, config: EmailConfig) -> HumanTask | None:
    """The task whose emails carry ``recipient`` as their reply address, else None (not a reply
    address of ``reply_domain``, no such task, or a token that is not the task's)."""
    local, _, domain = parseaddr(recipient)[1].lower().rpartition("@")
    found = _REPLY.match(local)
    if found is None or not config.reply_domain or domain != config.reply_domain.lower():
        return None
    task = task_store.get_task(found["task"])
    if task is None:
        return None
    digest = _digest(found["token"])
    for event in task_store.task_events(task.id):
        stored = (event.detail or {}).get("reply_token_sha256") if event.action == "emailed" else None
        if isinstance(stored, str) and hmac.compare_digest(stored, digest):
            return task
    return None


def is_reply_address(recipient: str, config: EmailConfig) -> bool:
    """Whether ``recipient`` has the shape of a reply address of ``reply_domain`` (not checked)."""
    local, _, domain = parseaddr(recipient)[1].lower().rpartition("@")
    return bool(config.reply_domain) and domain == (config.reply_domain or "").lower() and _REPLY.match(local) is not None


_QUOTE_START = re.compile(r"^(>|on .+wrote:\s*$|-----\s*original message\s*-----|-- $|from:\s)", re.IGNORECASE)
_FIELD_LINE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*:\s*(.*?)\s*$")


def answer_from_reply(text: str, fields: list[dict[str, Any]]) -> dict[str, Any]:
    """The answer a reply's ``text`` gives to a task with ``fields`` (see the module docstring)."""
    kept = []
    for line in text.replace("\r\n", "\n").split("\n"):
        if _QUOTE_START.match(line):
            break
        kept.append(line)
    names = {f["name"].lower(): f["name"] for f in fields}
    free = free_text_field(fields)
    answer: dict[str, Any] = {}
    rest = []
    for line in kept:
        found = _FIELD_LINE.match(line)
        name = names.get(found[1].lower()) if found else None
        if found and name is not None:
            answer[name] = found[2]
        else:
            rest.append(line)
    text_answer = "\n".join(rest).strip()
    if free is not None and free not in answer and text_answer:
        answer[free] = text_answer
    return answer
