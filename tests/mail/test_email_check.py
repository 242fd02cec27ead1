"""`ergon check` and email: `send_email` is refused where the folder has no `tools/email.yaml`,
and the file's own mistakes are reported at their line and column."""

from __future__ import annotations

from pathlib import Path

from compiler import check_workspace, load_workspace

PROCESS = """\
format_version: 1
process: mailer
initial: notify
nodes:
  notify: {type: tool, tool: send_email, input: {to: [a@example.com], subject: Hi, markdown: Hello}, transitions: [{to: write}]}
  write:
    type: agent
    prompt: Tell the customer.
    tools: [+think, +send_email]
    transitions: [{to: done, trigger: agent}]
  done: {type: final}
"""

#: the same process, taking the email a run started by mail is given
MAIL_PROCESS = PROCESS.replace("initial: notify\n", "initial: notify\ncontext:\n  schema:\n    type: object\n"
                               "    required: [email]\n    properties:\n      email: {type: object}\n")

TEMPLATE = """\
kind: template
name: t
input_form: intake
steps:
  - key: tell
    prompt: "Tell {{input}}"
    output_key: told
    output_form: intake
    tools_allowed: [think, send_email]
"""

WORKFLOW = """\
kind: workflow
name: w
steps:
  - name: send_email
    params: {to: [a@example.com], subject: Hi, markdown: Hello}
"""

GOOD = """\
smtp:
  host: smtp.example.com
  port: 587
  username: ergon@example.com
  password: secret:SMTP_PASSWORD
from: "Ergon <ergon@example.com>"
reply_domain: mail.example.com
ask_by_email: true
addresses: {lea: lea@example.com}
inbound:
  port: 2525
  allowed_senders: [example.com]
  start:
    - {address: invoices@mail.example.com, definition: mailer}
"""


def _check(folder: Path, files: dict[str, str], email: str | None):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "tools").mkdir(exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text)
    if email is not None:
        (folder / "tools" / "email.yaml").write_text(email)
    return check_workspace(load_workspace([folder])).diagnostics


def test_send_email_without_a_configuration_is_refused_wherever_it_is_named(tmp_path):
    found = _check(tmp_path / "defs", {"p.yaml": PROCESS, "t.yaml": TEMPLATE, "w.yaml": WORKFLOW}, None)
    refused = sorted((Path(d.file).name, d.line, d.col) for d in found if d.code == "not-configured")
    assert refused == [("p.yaml", 5, 30), ("p.yaml", 9, 21), ("t.yaml", 9, 28), ("w.yaml", 4, 11)]
    d = next(d for d in found if d.code == "not-configured")
    assert "uses `send_email`, and the definitions folder has no email configuration" in d.message
    assert "tools/email.yaml" in d.hint and "secret:NAME" in d.hint


def test_with_a_configuration_send_email_checks_clean(tmp_path):
    found = _check(tmp_path / "defs", {"p.yaml": MAIL_PROCESS, "w.yaml": WORKFLOW}, GOOD)
    assert [d for d in found if d.severity == "error"] == []


def test_a_project_tool_named_send_email_needs_no_configuration(tmp_path):
    folder = tmp_path / "defs"
    (folder / "tools").mkdir(parents=True)
    (folder / "tools" / "mail.py").write_text("from flows.tools import tool\n\n@tool\ndef send_email(to: list, subject: str, "
                                              "markdown: str) -> dict:\n    return {}\n")
    found = _check(folder, {"p.yaml": PROCESS}, None)
    assert [d for d in found if d.code == "not-configured"] == []


def test_the_configuration_file_mistakes_are_reported_at_their_place(tmp_path):
    bad = """\
smtp:
  host: smtp.example.com
  prot: 587
  security: tls
  username: ergon@example.com
  password: hunter2
from: not-an-address
ask_by_email: true
addresses: {lea: lea-at-example}
inbound:
  port: 70000
  max_bytes: 10
  start:
    - {address: in@mail.example.com, definition: nothing_here}
"""
    found = _check(tmp_path / "defs", {"p.yaml": PROCESS}, bad)
    got = {(d.code, d.line, d.col) for d in found if d.file.endswith("email.yaml")}
    assert got == {
        ("unknown-key", 3, 3),            # prot (did you mean port?)
        ("bad-value", 4, 13),             # security: tls
        ("bad-value", 6, 13),             # a password written in the file
        ("bad-value", 7, 7),              # from
        ("missing-field", 8, 1),          # ask_by_email without reply_domain
        ("bad-value", 9, 18),             # lea's address
        ("bad-value", 11, 9),             # port out of range
        ("bad-value", 12, 14),            # max_bytes
        ("missing-field", 10, 1),         # inbound without allowed_senders
        ("unknown-process", 14, 50),      # start names no definition
    }
    by_line = {d.line: d for d in found if d.file.endswith("email.yaml")}
    assert by_line[3].hint == "did you mean `port`?"
    assert "holds a password instead of naming where it is kept" in by_line[6].message
    assert "secret:NAME" in by_line[6].hint


def test_a_reference_that_could_never_resolve_is_refused(tmp_path):
    text = GOOD.replace("secret:SMTP_PASSWORD", "prefect-secret:Smtp_Password")
    found = _check(tmp_path / "defs", {"p.yaml": MAIL_PROCESS}, text)
    (d,) = [d for d in found if d.file.endswith("email.yaml")]
    assert (d.code, d.line, d.col) == ("bad-value", 5, 13) and "not a Prefect block name" in d.message
    assert "prefect-secret:smtp-password" in d.hint


def test_a_start_definition_must_take_the_email_it_is_started_with(tmp_path):
    found = _check(tmp_path / "defs", {"p.yaml": PROCESS}, GOOD)  # `mailer` has no context field `email`
    (d,) = [d for d in found if d.file.endswith("email.yaml")]
    assert (d.code, d.line) == ("bad-value", 14) and "`mailer` has no context field `email`" in d.message
    found = _check(tmp_path / "defs2", {"p.yaml": MAIL_PROCESS}, GOOD)
    assert [d for d in found if d.file.endswith("email.yaml")] == []
