"""An agent's `ask_user` over email, end to end: `ergon run` pauses on the task and emails it to the
member of the asked group (a real local SMTP server receives it); a reply from someone the task
refuses leaves the run paused; the member's reply, sent to Ergon's SMTP listener, answers the
task, the run resumes through Prefect and the agent gets the reply's text."""

from __future__ import annotations

import json
import os
import smtplib
import subprocess
import sys
from email.message import EmailMessage
from pathlib import Path

import pytest

from conftest import SMTP_PASSWORD, email_yaml, free_port

sys.path.insert(0, str(Path(__file__).parents[1] / "llm"))
sys.path.insert(0, str(Path(__file__).parents[1] / "humans"))

from fake_openai import FakeOpenAI  # noqa: E402
from test_pause_resume import ERGON, cli, finish, wait_for_task  # noqa: E402

pytestmark = pytest.mark.prefect

PROCESS = """
format_version: 1
process: asking_by_mail
initial: plan_trip
context:
  schema:
    type: object
    properties:
      region: {type: string}
nodes:
  plan_trip:
    type: agent
    environment: fake
    prompt: Pick the region for the offsite; ask the organisers.
    tools: [ask_user]
    ask_user: group:organisers
    writes: [region]
    transitions: [{to: done, trigger: agent}]
  done: {type: final}
"""

ENV = """
kind: environment
name: fake
models:
  - {{model: openai/asker, api_base: "{url}", api_key: "env:FAKE_OPENAI_KEY"}}
"""


def _reply(port: int, sender: str, to: str, text: str) -> None:
    msg = EmailMessage()
    msg["From"], msg["To"], msg["Subject"] = sender, to, "Re: [Ergon] Which region?"
    msg.set_content(text)
    with smtplib.SMTP("127.0.0.1", port, timeout=60) as client:
        client.send_message(msg)


def test_ask_user_by_email_is_answered_by_a_reply(prefect_api, store, definitions, tokens, smtp_sink, monkeypatch):
    from flows.email import config
    from flows.store import tasks as task_store
    from flows.triggers.email import EmailListener

    server = FakeOpenAI().start()
    listen = free_port()
    (definitions / "tools" / "email.yaml").write_text(email_yaml(smtp_sink.port, extra=f"""\
reply_domain: reply.example.com
ask_by_email: true
addresses: {{olga: olga@example.com, starter: starter@example.com}}
inbound: {{host: 127.0.0.1, port: {listen}, allowed_senders: [example.com]}}
"""))
    monkeypatch.setenv("TEST_SMTP_PASSWORD", SMTP_PASSWORD)
    monkeypatch.setattr(config, "_configured", {})
    listener = EmailListener(config.read(definitions / "tools")).start()  # what `ergon serve` runs
    try:
        (definitions / "asking_by_mail.yaml").write_text(PROCESS)
        (definitions / "env.yaml").write_text(ENV.format(url=server.url))
        server.script("asker", {"tool_calls": [{"name": "ask_user", "arguments": {"question": "Which region?"}}]},
                      {"json": {"region": "EU"}})
        env = {**os.environ, "ERGON_DATABASE_URL": store, "ERGON_DEFINITIONS": str(definitions),
               "FAKE_OPENAI_KEY": "sk-test", "ERGON_TOKEN": tokens["starter"], "TEST_SMTP_PASSWORD": SMTP_PASSWORD}
        assert cli(["users", "add", "olga", "--group", "organisers", "--token", tokens.admin], env).returncode == 0
        proc = subprocess.Popen(ERGON + ["run", "asking_by_mail", "--json"], env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        try:
            task = wait_for_task("asking_by_mail")
            (mail,) = smtp_sink.wait_for(1)
            assert mail.rcpt_tos == ["olga@example.com"] and mail.message["Subject"] == "[Ergon] Which region?"
            reply_to = str(mail.message["Reply-To"])
            assert reply_to.startswith(f"r+{task.id}.") and reply_to.endswith("@reply.example.com")

            # the run's starter is no organiser: refused, and the run stays paused on its task
            with pytest.raises(smtplib.SMTPDataError) as refused:
                _reply(listen, "starter@example.com", reply_to, "US")
            assert refused.value.smtp_code == 550 and b"not a member" in refused.value.smtp_error
            assert task_store.get_task(task.id).status == "pending" and proc.poll() is None

            _reply(listen, "olga@example.com", reply_to, "Europe, please\n\nOn Monday Ergon wrote:\n> Which region?\n")
            result = finish(proc)
        finally:
            if proc.poll() is None:
                proc.kill()
    finally:
        listener.stop()
        server.stop()
    assert result["status"] == "completed" and result["context"]["region"] == "EU"
    done = task_store.get_task(task.id)
    assert (done.answered_by, done.answered_via) == ("olga", "email")
    second = server.for_model("asker")[1].body["messages"]
    tool_message = next(m for m in second if m["role"] == "tool")
    assert json.loads(tool_message["content"]) == {"answered_by": "olga", "answer": "Europe, please"}
