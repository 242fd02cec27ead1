"""Fixtures for the email tests: a real SMTP server on a free local port (aiosmtpd) that keeps
what it receives and who logged in, and an email configuration pointing at it."""

from __future__ import annotations

import socket
import threading
import time
from dataclasses import dataclass, field
from email import message_from_bytes, policy
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword

SMTP_USER = "ergon-mailer"
SMTP_PASSWORD = "s3cret-smtp-pass-9Zq"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Received:
    mail_from: str
    rcpt_tos: list[str]
    message: EmailMessage


@dataclass
class Sink:
    """The SMTP server of the tests: ``messages`` received, ``logins`` (user, password) tried."""

    port: int
    messages: list[Received] = field(default_factory=list)
    logins: list[tuple[str, str]] = field(default_factory=list)
    arrived: threading.Condition = field(default_factory=threading.Condition)

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:  # noqa: N802
        msg = message_from_bytes(envelope.content, policy=policy.default)
        with self.arrived:
            self.messages.append(Received(envelope.mail_from, list(envelope.rcpt_tos), msg))  # type: ignore[arg-type]
            self.arrived.notify_all()
        return "250 OK"

    def authenticate(self, server: Any, session: Any, envelope: Any, mechanism: str, auth_data: Any) -> AuthResult:
        if isinstance(auth_data, LoginPassword):
            user, password = auth_data.login.decode(), auth_data.password.decode()
            self.logins.append((user, password))
            return AuthResult(success=(user, password) == (SMTP_USER, SMTP_PASSWORD), handled=False)
        return AuthResult(success=False, handled=False)

    def wait_for(self, count: int, timeout: float = 60.0) -> list[Received]:
        deadline = time.monotonic() + timeout
        with self.arrived:
            while len(self.messages) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"{len(self.messages)} email(s) arrived, expected {count}")
                self.arrived.wait(left)
        return list(self.messages)


@pytest.fixture
def smtp_sink():
    sink = Sink(port=free_port())
    controller = Controller(sink, hostname="127.0.0.1", port=sink.port, authenticator=sink.authenticate,
                            auth_require_tls=False)
    controller.start()
    yield sink
    controller.stop()


def email_yaml(port: int, *, extra: str = "") -> str:
    """An email configuration sending through the sink on ``port`` (plain SMTP with a login)."""
    return f"""\
smtp:
  host: 127.0.0.1
  port: {port}
  security: none
  username: {SMTP_USER}
  password: env:TEST_SMTP_PASSWORD
  timeout_seconds: 20
from: "Ergon <ergon@example.com>"
{extra}"""


@pytest.fixture
def email_tools(tmp_path, smtp_sink, monkeypatch) -> Path:
    """A tools folder whose email.yaml sends through the sink, configured for this process."""
    from flows.email import config

    folder = tmp_path / "tools"
    folder.mkdir(exist_ok=True)
    (folder / "email.yaml").write_text(email_yaml(smtp_sink.port))
    monkeypatch.setenv("TEST_SMTP_PASSWORD", SMTP_PASSWORD)
    monkeypatch.setattr(config, "_configured", {})
    config.configure(folder)
    return folder


@pytest.fixture
def run_ctx(store):
    """A run and a running visit; the tool context points at them for the test's duration."""
    import flows.tools.builtins  # noqa: F401  (registers the built-ins)
    from flows.store import runs as run_store
    from flows.store import visits as visit_store
    from flows.tools.context import CURRENT, ToolContext

    run = run_store.create_run("mail_test", content={"name": "mail_test"})
    visit = visit_store.start_visit(run.id, "agent", "agent")
    token = CURRENT.set(ToolContext(run_id=run.id, visit_id=visit.id, node_id="agent", started_by="tester"))
    yield CURRENT.get()
    CURRENT.reset(token)
