"""The `send_email` built-in sends through the configured SMTP server: a real local server (the
sink) receives the message, with its headers, its text and HTML parts, the login of the
configuration — and the password appears in no stored record."""

from __future__ import annotations

import asyncio
import json

import jsonschema
import pytest

from compiler.builtin_signatures import BUILTIN_SIGNATURES
from conftest import SMTP_PASSWORD, SMTP_USER, email_yaml


def call(name, args):
    from flows.tools.invoke import invoke

    return asyncio.run(invoke(name, args))


BODY = """\
# Quarterly report

Revenue is **up 12 %**; see the table.

| region | revenue |
|---|---|
| EU | 1.2 M |

<script>alert('x')</script>
"""


def test_send_email_delivers_text_and_html_parts_from_the_configured_sender(run_ctx, email_tools, smtp_sink):
    from flows.store import visits as visit_store

    result = call("send_email", {"to": ["ann@example.com"], "cc": ["Bob <bob@example.org>"], "bcc": ["audit@example.com"],
                                 "subject": "Q3 report", "markdown": BODY})
    (got,) = smtp_sink.wait_for(1)
    msg = got.message
    assert msg["From"] == "Ergon <ergon@example.com>" and got.mail_from == "ergon@example.com"
    assert msg["To"] == "ann@example.com" and msg["Cc"] == "Bob <bob@example.org>" and msg["Subject"] == "Q3 report"
    assert "Bcc" not in msg and "audit@example.com" not in msg.as_string()  # blind copy: envelope only
    assert sorted(got.rcpt_tos) == ["ann@example.com", "audit@example.com", "bob@example.org"]
    assert msg.get_content_type() == "multipart/alternative"
    text = msg.get_body(preferencelist=("plain",))
    html = msg.get_body(preferencelist=("html",))
    assert text.get_content().replace("\r\n", "\n").strip() == BODY.strip()
    page = html.get_content()
    assert "<strong>up 12 %</strong>" in page and "<h1>Quarterly report</h1>" in page and "<td>EU</td>" in page
    assert "<script>" not in page and "&lt;script&gt;" in page  # raw HTML in the markdown is shown, never passed
    assert result == {"message_id": msg["Message-ID"], "accepted": sorted(got.rcpt_tos, key=["ann@example.com",
                      "bob@example.org", "audit@example.com"].index)}
    jsonschema.validate(result, BUILTIN_SIGNATURES["send_email"].result_schema)  # what `${output.…}` reads
    assert smtp_sink.logins == [(SMTP_USER, SMTP_PASSWORD)]
    # the call is recorded, and the password is in no record of it
    (record,) = visit_store.tool_calls_for_run(run_ctx.run_id)
    assert record.tool == "send_email" and record.status == "ok"
    assert SMTP_PASSWORD not in json.dumps([record.args, record.result, record.error], default=str)


def test_a_wrong_password_fails_the_call_without_showing_it(run_ctx, email_tools, smtp_sink, monkeypatch):
    from flows.store import visits as visit_store
    from flows.tools.errors import ToolError

    monkeypatch.setenv("TEST_SMTP_PASSWORD", "not-the-password-42")
    with pytest.raises(ToolError) as caught:
        call("send_email", {"to": ["ann@example.com"], "subject": "x", "markdown": "x"})
    assert "refused the login" in str(caught.value) and "not-the-password-42" not in str(caught.value)
    assert smtp_sink.messages == []
    (record,) = visit_store.tool_calls_for_run(run_ctx.run_id)
    assert "not-the-password-42" not in json.dumps([record.args, record.result, record.error], default=str)


@pytest.mark.parametrize("args, problem", [
    ({"to": ["ann@example.com\r\nBcc: eve@evil.test"], "subject": "x", "markdown": "x"}, "is not one email address"),
    ({"to": ["ann@example.com"], "subject": "hi\r\nBcc: eve@evil.test", "markdown": "x"}, "must be one line"),
    ({"to": ["not an address"], "subject": "x", "markdown": "x"}, "is not an email address"),
    ({"to": [], "subject": "x", "markdown": "x"}, "names no recipient"),
])
def test_header_injection_and_bad_addresses_are_refused_before_sending(run_ctx, email_tools, smtp_sink, args, problem):
    from flows.tools.errors import ToolError

    with pytest.raises(ToolError, match=problem):
        call("send_email", args)
    assert smtp_sink.messages == []


def test_the_seed_parameters_not_built_are_refused_not_ignored(run_ctx, email_tools, smtp_sink):
    from flows.tools.invoke import ToolArgumentError

    with pytest.raises(ToolArgumentError):
        call("send_email", {"to": ["ann@example.com"], "subject": "x", "markdown": "x", "enable_reply": True})
    assert smtp_sink.messages == []


def test_starttls_against_a_server_without_it_fails_naming_the_setting(run_ctx, email_tools, smtp_sink):
    from flows.tools.errors import ToolError

    text = (email_tools / "email.yaml").read_text().replace("security: none", "security: starttls")
    (email_tools / "email.yaml").write_text(text)
    with pytest.raises(ToolError, match="STARTTLS.*check `security`|check `security`"):
        call("send_email", {"to": ["ann@example.com"], "subject": "x", "markdown": "x"})
    assert smtp_sink.messages == [] and smtp_sink.logins == []  # no login over the plain connection


def test_without_a_configuration_the_call_says_what_to_add(run_ctx, tmp_path, monkeypatch):
    from flows.email import config
    from flows.tools.errors import ToolError

    monkeypatch.setattr(config, "_configured", {})
    monkeypatch.setenv("ERGON_DEFINITIONS", str(tmp_path / "nowhere"))
    with pytest.raises(ToolError, match="no email configuration: add .*email.yaml"):
        call("send_email", {"to": ["ann@example.com"], "subject": "x", "markdown": "x"})


def test_a_configuration_with_errors_is_refused_as_a_whole(run_ctx, email_tools, smtp_sink):
    from flows.tools.errors import ToolError

    (email_tools / "email.yaml").write_text(email_yaml(smtp_sink.port).replace("env:TEST_SMTP_PASSWORD", "hunter22"))
    with pytest.raises(ToolError, match="smtp.password: `password` holds a password"):
        call("send_email", {"to": ["ann@example.com"], "subject": "x", "markdown": "x"})
    assert smtp_sink.messages == [] and smtp_sink.logins == []
