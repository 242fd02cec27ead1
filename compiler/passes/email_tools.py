"""The `email_tools` pass: ``send_email`` only where the folder configures email.

The built-in ``send_email`` sends through the SMTP server of the folder's ``tools/email.yaml``
(:mod:`compiler.email_config`). A definition naming it — an agent's ``tools``, a tool node, a
template step's ``tools_allowed``, a workflow activity — in a folder without that file gets
``not-configured`` at the name, with what to add: otherwise it would check clean and fail at
its first email. A project tool named ``send_email`` replaces the built-in and needs nothing.
"""

from __future__ import annotations

from collections.abc import Iterator

from compiler.email_config import NOT_CONFIGURED_HINT, TOOL, send_email_uses
from compiler.errors import Finding


def check(unit, ws) -> Iterator[Finding]:
    if ws.tools.email_config is not None:
        return
    for path, who in send_email_uses(unit, ws.tools):
        yield Finding("not-configured", path, f"{who} uses `{TOOL}`, and the definitions folder has no email "
                      "configuration to send through", hint=NOT_CONFIGURED_HINT)
