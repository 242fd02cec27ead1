"""Composing an email from markdown and sending it through the configured SMTP server.

The body is written in markdown: the text part is that markdown as written (readable as plain
text), the HTML part its rendering by markdown-it-py (CommonMark, plus tables and
strikethrough). Raw HTML in the markdown is shown as text, never passed through: the body is
often a model's words, and an email's HTML is not a place for a model to write markup the
recipient's mail client would act on.

Sending uses the standard library's ``smtplib``: ``starttls`` (upgrade a plain connection,
port 587), ``ssl`` (TLS from the first byte, port 465) or ``none`` (a relay on the local
network), both TLS modes with the system's certificate check. The login's password is resolved
from its reference for each sending and never returned, logged or recorded.
"""

from __future__ import annotations

import smtplib
import ssl
from collections.abc import Iterable
from email.message import EmailMessage
from email.utils import formataddr, formatdate, make_msgid, parseaddr

from markdown_it import MarkdownIt

from flows.email.config import EmailConfig
from flows.errors import ErgonError

#: Most recipients (to + cc + bcc) of one email: an agent mailing a list is a mistake to stop.
MAX_RECIPIENTS = 50
MAX_SUBJECT = 998  # RFC 5322's line limit

_RENDERER = MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"])


class EmailError(ErgonError):
    """An email that cannot be composed (a bad address) or that the server refused."""


def to_html(markdown: str) -> str:
    """The HTML document of ``markdown`` (raw HTML in it escaped)."""
    body = _RENDERER.render(markdown)
    return f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"></head><body>\n{body}</body></html>\n'


def address(value: str, what: str) -> str:
    """The bare address of ``value`` (``Name <a@b.c>`` or ``a@b.c``); :class:`EmailError` when it
    is not one address (line breaks included, which would add headers)."""
    if not isinstance(value, str) or "\r" in value or "\n" in value or "," in value:
        raise EmailError(f"{what}: {value!r} is not one email address")
    _, addr = parseaddr(value)
    local, at, domain = addr.rpartition("@")
    if not (at and local and "." in domain) or any(c.isspace() for c in addr):
        raise EmailError(f"{what}: {value!r} is not an email address")
    return addr


def _named(value: str, what: str) -> str:
    """``value`` checked and written again (``Name <a@b.c>`` keeps its name)."""
    address(value, what)
    return formataddr(parseaddr(value))


def compose(config: EmailConfig, *, to: Iterable[str], subject: str, markdown: str, cc: Iterable[str] = (),
            reply_to: str | None = None, in_reply_to: str | None = None) -> EmailMessage:
    """A multipart/alternative message (text, then HTML) from the configured sender."""
    to, cc = list(to), list(cc)
    if not to:
        raise EmailError("`to` names no recipient")
    if "\r" in subject or "\n" in subject or len(subject) > MAX_SUBJECT:
        raise EmailError("`subject` must be one line (at most 998 characters)")
    msg = EmailMessage()
    msg["From"] = config.sender
    msg["To"] = ", ".join(_named(a, "to") for a in to)
    if cc:
        msg["Cc"] = ", ".join(_named(a, "cc") for a in cc)
    if reply_to:
        msg["Reply-To"] = reply_to
    if in_reply_to:
        msg["In-Reply-To"] = msg["References"] = in_reply_to
    msg["Subject"] = subject
    msg["Date"] = formatdate(localtime=False, usegmt=True)
    msg["Message-ID"] = make_msgid(domain=parseaddr(config.sender)[1].rpartition("@")[2] or None)
    msg.set_content(markdown)
    msg.add_alternative(to_html(markdown), subtype="html")
    return msg


def send(config: EmailConfig, msg: EmailMessage, bcc: Iterable[str] = ()) -> list[str]:
    """Send ``msg`` to its To and Cc and to ``bcc`` (never written in the message); returns the
    addresses the server accepted. :class:`EmailError` when it refuses them all or fails."""
    recipients = [parseaddr(a)[1] for field in ("To", "Cc") for a in (msg.get_all(field) or [])
                  for a in str(a).split(",") if a.strip()]
    recipients += [address(a, "bcc") for a in bcc]
    if len(recipients) > MAX_RECIPIENTS:
        raise EmailError(f"{len(recipients)} recipients; at most {MAX_RECIPIENTS} per email")
    smtp = config.smtp
    context = ssl.create_default_context()
    try:
        client: smtplib.SMTP
        if smtp.security == "ssl":
            client = smtplib.SMTP_SSL(smtp.host, smtp.port, timeout=smtp.timeout, context=context)
        else:
            client = smtplib.SMTP(smtp.host, smtp.port, timeout=smtp.timeout)
        with client:
            if smtp.security == "starttls":
                client.starttls(context=context)
            login = smtp.credentials()
            if login is not None:
                client.login(*login)
            refused = client.send_message(msg, from_addr=parseaddr(config.sender)[1], to_addrs=recipients)
    except smtplib.SMTPAuthenticationError as exc:
        raise EmailError(f"the SMTP server {smtp.host}:{smtp.port} refused the login ({exc.smtp_code})") from None
    except smtplib.SMTPRecipientsRefused as exc:
        raise EmailError(f"the SMTP server refused every recipient: {', '.join(sorted(exc.recipients))}") from None
    except smtplib.SMTPNotSupportedError as exc:
        raise EmailError(f"the SMTP server {smtp.host}:{smtp.port} does not support {exc} "
                         "(check `security` in the email configuration)") from None
    except (smtplib.SMTPException, OSError) as exc:
        raise EmailError(f"sending through {smtp.host}:{smtp.port} failed: {exc}") from None
    return [r for r in recipients if r not in refused]
