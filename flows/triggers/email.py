"""``ergon serve``'s SMTP listener: replies that answer human tasks, and mail that starts runs.

With ``inbound`` in ``tools/email.yaml`` (:mod:`flows.email.config`), ``ergon serve`` listens for
SMTP on ``inbound.host:port`` (aiosmtpd; 127.0.0.1 unless configured). The mail server that
receives the project's domain relays to it; that server — not this listener — checks SPF and
DKIM, so put nothing else in front of it. Each message is taken or refused in the SMTP dialogue
itself, so the sender's server bounces a refusal to the sender:

* ``MAIL FROM`` a sender that ``allowed_senders`` does not list (by address or domain): ``550``.
* ``RCPT TO`` an address that is neither a task's reply address (``r+…@reply_domain`` with that
  task's token) nor a ``start`` address: ``550``; a second recipient in one message: ``452`` (the sending server sends again
  for it: one message, one action).
* ``DATA`` over ``max_bytes``: ``552`` (aiosmtpd stops reading it); a ``From`` header that names
  another address than the envelope's sender: ``550``.
* A **reply** answers its task (:func:`flows.runs.answers.answer`, channel ``email``) — when its
  address carries that task's token (:func:`flows.email.asking.task_of_reply_address`), and as
  the user whose address (``addresses``) the sender is. Anything else is ``550`` with the reason,
  recorded in the task's audit trail when the task is known (an unknown sender, a sender the
  task's rules refuse, an invalid answer); the run stays paused.
* Mail to a **start** address starts a run of its definition (:func:`flows.runs.start_background`,
  trigger ``email``) as the sender's user, with the input ``email: {from, subject, body,
  message_id}`` (``body``: the text part, else the HTML part's text): ``250`` names the run. A
  sender that is no user's address, or inputs the definition refuses, are ``550``.

The listener runs in a thread of its own (aiosmtpd's ``Controller``); the store and the run owner
are called from a worker thread, never on its event loop.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from email import message_from_bytes, policy
from email.message import EmailMessage
from email.utils import getaddresses
from html.parser import HTMLParser
from typing import Any

from aiosmtpd.controller import Controller

from flows.email import asking
from flows.email.config import EmailConfig

log = logging.getLogger("ergon.email")


def _answer(task_id: str, user: str, answer: dict[str, Any]) -> Any:
    from flows.runs import answers

    return answers.answer(task_id, user, answer, via="email")


def _start(definition: str, inputs: dict[str, Any], user: str) -> Any:
    from flows.runs import start_background

    return start_background(definition, inputs, started_by=user, trigger="email")


class _Text(HTMLParser):
    """The text of an HTML body: its character data, without what a browser does not show."""

    _HIDDEN = frozenset({"script", "style", "head", "title"})

    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []
        self._hidden = 0

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        if tag in self._HIDDEN:
            self._hidden += 1
        elif tag in ("br", "p", "div", "tr", "li"):
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in self._HIDDEN and self._hidden:
            self._hidden -= 1

    def handle_data(self, data: str) -> None:
        if not self._hidden:
            self.parts.append(data)


def body_text(msg: EmailMessage) -> str:
    """The message's text: its plain part, else its HTML part's text."""
    part = msg.get_body(preferencelist=("plain", "html"))
    if part is None:
        return ""
    content = part.get_content()
    if part.get_content_type() == "text/html":
        parser = _Text()
        parser.feed(content)
        content = "".join(parser.parts)
    return str(content).strip()


class Inbox:
    """What the listener does with each message (``aiosmtpd`` handler hooks)."""

    def __init__(self, config: EmailConfig, *, answer: Callable[[str, str, dict], Any] = _answer,
                 start: Callable[[str, dict, str], Any] = _start) -> None:
        assert config.inbound is not None
        self.config, self.inbound = config, config.inbound
        self._answer, self._start = answer, start

    async def handle_MAIL(self, server: Any, session: Any, envelope: Any, address: str, mail_options: list) -> str:  # noqa: N802
        if not self.inbound.allows(address):
            log.info("mail from %s refused: not an allowed sender", address)
            return "550 5.7.1 Sender not allowed"
        envelope.mail_from = address
        envelope.mail_options.extend(mail_options)
        return "250 OK"

    async def handle_RCPT(self, server: Any, session: Any, envelope: Any, address: str, rcpt_options: list) -> str:  # noqa: N802
        if envelope.rcpt_tos:
            return "452 4.5.3 One recipient per message"
        if self.inbound.route(address) is None:
            # a reply address is taken only when it carries its task's token (the store is read
            # in a worker thread, off the listener's event loop)
            known = asking.is_reply_address(address, self.config) and await asyncio.to_thread(
                asking.task_of_reply_address, address, self.config) is not None
            if not known:
                return "550 5.1.1 No such mailbox"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:  # noqa: N802
        msg = message_from_bytes(envelope.content, policy=policy.default)
        assert isinstance(msg, EmailMessage)
        sender = envelope.mail_from
        header_from = [a.lower() for _, a in getaddresses(msg.get_all("From") or [])]
        if header_from != [sender.lower()]:
            return "550 5.7.1 The From header must be the envelope sender"
        try:
            return await asyncio.to_thread(self.deliver, envelope.rcpt_tos[0], sender, msg)
        except Exception:  # a bug or the store down: the sender's server tries again later
            log.exception("mail from %s to %s could not be handled", sender, envelope.rcpt_tos[0])
            return "451 4.3.0 Could not handle the message; try again later"

    def deliver(self, recipient: str, sender: str, msg: EmailMessage) -> str:
        """The SMTP answer to ``msg`` from ``sender`` to ``recipient`` (after the checks above)."""
        route = self.inbound.route(recipient)
        if route is not None:
            return self._start_run(route.definition, sender, msg)
        return self._reply(recipient, sender, msg)

    def _reply(self, recipient: str, sender: str, msg: EmailMessage) -> str:
        from flows import humans

        task = asking.task_of_reply_address(recipient, self.config)
        if task is None:
            log.info("reply from %s to %s refused: no task has that reply address", sender, recipient)
            return "550 5.1.1 No such mailbox"
        user = self.config.user_of(sender)
        if user is None:
            reason = f"{sender} is not the address of an Ergon user (`addresses` of the email configuration)"
            humans.refuse(task.id, humans.Actor(name=f"email:{sender}"), "answer", reason, detail={"via": "email"})
            return f"550 5.7.1 {reason}"
        answer = asking.answer_from_reply(body_text(msg), humans.normalize_fields(task.fields))
        try:
            self._answer(task.id, user, answer)
        except humans.TaskRefused as exc:
            return "550 5.7.1 " + " ".join(str(exc).split())[:400]
        log.info("task %s answered by %s by email", task.id, user)
        return "250 2.0.0 Answer taken"

    def _start_run(self, definition: str, sender: str, msg: EmailMessage) -> str:
        from flows.runs import StartRefused

        user = self.config.user_of(sender)
        if user is None:
            return f"550 5.7.1 {sender} is not the address of an Ergon user"
        inputs = {"email": {"from": sender, "subject": str(msg.get("Subject", "")), "body": body_text(msg),
                            "message_id": str(msg.get("Message-ID", ""))}}
        try:
            started = self._start(definition, inputs, user)
        except StartRefused as exc:
            return "550 5.6.0 " + " ".join(str(exc).split())[:400]
        log.info("mail from %s started run %s of %s", sender, started.run_id, definition)
        return f"250 2.0.0 Started run {started.run_id}"


class EmailListener:
    """The SMTP listener (``start()`` runs it in a thread, ``stop()`` ends it)."""

    def __init__(self, config: EmailConfig, **inbox: Any) -> None:
        assert config.inbound is not None
        self.inbox = Inbox(config, **inbox)
        self.controller = Controller(self.inbox, hostname=config.inbound.host, port=config.inbound.port,
                                     data_size_limit=config.inbound.max_bytes)

    @property
    def address(self) -> str:
        return f"{self.controller.hostname}:{self.controller.port}"

    def start(self) -> EmailListener:
        self.controller.start()
        return self

    def stop(self) -> None:
        self.controller.stop()
