"""`ergon serve` serves email: with `inbound` in tools/email.yaml (and no trigger at all) it listens
for SMTP, and mail to a start address starts a run; a configuration with errors stops it."""

from __future__ import annotations

import os
import re
import signal
import smtplib
import subprocess
import sys
import time
from email.message import EmailMessage
from pathlib import Path

import pytest

from conftest import SMTP_PASSWORD, email_yaml, free_port

sys.path.insert(0, str(Path(__file__).parents[1] / "humans"))

from test_pause_resume import ERGON  # noqa: E402

pytestmark = pytest.mark.prefect

INTAKE = """
kind: pipeline
name: mail_intake
context:
  schema:
    type: object
    required: [email]
    properties:
      email:
        type: object
        required: [from, subject, body]
        properties: {from: {type: string}, subject: {type: string}, body: {type: string}, message_id: {type: string}}
      last: {type: string}
nodes:
  note: {type: tool, tool: mark, input: {name: "{{ email.subject }}"}, writes: [last]}
"""


def _serve(env: dict, log: Path) -> subprocess.Popen:
    return subprocess.Popen(ERGON + ["serve", "--webhook-port", "0"], env=env, stdout=log.open("w"),
                            stderr=subprocess.STDOUT, start_new_session=True)


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(45)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)


def test_serve_listens_for_email_and_mail_to_a_start_address_starts_a_run(prefect_api, store, definitions, tmp_path):
    from flows import people
    from flows.store import runs as run_store

    port = free_port()
    (definitions / "mail_intake.yaml").write_text(INTAKE)
    (definitions / "tools" / "email.yaml").write_text(email_yaml(free_port(), extra=f"""\
addresses: {{ann: ann@example.com}}
inbound:
  port: {port}
  allowed_senders: [example.com]
  start: [{{address: intake@in.example.com, definition: mail_intake}}]
"""))
    people.add_user("ann")
    env = {**os.environ, "ERGON_DATABASE_URL": store, "ERGON_DEFINITIONS": str(definitions),
           "TEST_SMTP_PASSWORD": SMTP_PASSWORD, "COLUMNS": "200"}
    log = tmp_path / "serve.log"
    proc = _serve(env, log)
    try:
        deadline = time.monotonic() + 120
        while "ready — Ctrl-C" not in log.read_text() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.25)
        text = log.read_text()
        assert proc.poll() is None and f"email    SMTP on 127.0.0.1:{port}" in text, text
        assert "intake@in.example.com → mail_intake" in text
        msg = EmailMessage()
        msg["From"], msg["To"], msg["Subject"] = "ann@example.com", "intake@in.example.com", "Invoice 7"
        msg.set_content("Please book invoice 7.")
        with smtplib.SMTP("127.0.0.1", port, timeout=60) as client:
            client.ehlo()
            client.mail("ann@example.com")
            client.rcpt("intake@in.example.com")
            code, answer = client.data(msg.as_bytes())
        assert code == 250, answer
        run_id = re.search(rb"Started run ([0-9a-f]{32})", answer)[1].decode()
        deadline = time.monotonic() + 90
        while run_store.get_run(run_id).status not in ("completed", "failed") and time.monotonic() < deadline:
            time.sleep(0.3)
        run = run_store.get_run(run_id)
        assert (run.status, run.trigger, run.started_by, run.context["last"]) == ("completed", "email", "ann", "Invoice 7")
    finally:
        _stop(proc)


def test_serve_refuses_an_email_configuration_with_errors(store, definitions, tmp_path):
    (definitions / "tools" / "email.yaml").write_text(email_yaml(25, extra="inbound: {port: 2525}\n"))
    env = {**os.environ, "ERGON_DATABASE_URL": store, "ERGON_DEFINITIONS": str(definitions), "COLUMNS": "200"}
    done = subprocess.run(ERGON + ["serve", "--webhook-port", "0"], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert "inbound: `inbound` needs `allowed_senders`" in done.stderr + done.stdout
    assert "not serving email" in done.stderr + done.stdout
