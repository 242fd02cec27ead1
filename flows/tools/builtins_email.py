"""The ``send_email`` built-in: an email written in markdown, sent through the folder's SMTP server.

The server, its login and the ``from`` address come from ``tools/email.yaml``
(:mod:`flows.email.config`): a caller chooses recipients, subject and body, never the sender or
the server. ``ergon check`` refuses a definition that names the tool in a folder without that
file (``not-configured``); at run time a missing or broken file fails the call with the same
advice. The seed's ``attachments`` and ``enable_reply`` are not parameters: a call passing them
is refused by the tool's argument check (and by ``ergon check`` for a step's ``params``).
"""

from __future__ import annotations

from flows.email import message
from flows.email.config import EmailNotConfigured, current
from flows.tools import tool
from flows.tools.errors import ToolError


@tool(name="send_email")
def send_email(to: list[str], subject: str, markdown: str, cc: list[str] | None = None,
               bcc: list[str] | None = None) -> dict:
    """Send an email (markdown body, sent as HTML with a plain-text part) from the project's address.

    Args:
        to: recipient email addresses
        subject: the subject line
        markdown: the body, in markdown
        cc: carbon-copy recipients
        bcc: blind-copy recipients (not shown to the others)
    """
    try:
        config = current()
        assert config is not None
        msg = message.compose(config, to=to, subject=subject, markdown=markdown, cc=cc or [])
        accepted = message.send(config, msg, bcc=bcc or [])
    except (EmailNotConfigured, message.EmailError) as exc:
        raise ToolError("send_email", str(exc)) from None
    return {"message_id": str(msg["Message-ID"]), "accepted": accepted}
