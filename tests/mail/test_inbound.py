"""`ergon serve`'s SMTP listener, reached over real SMTP: a task is emailed to its people with a
reply address of its own; a reply answers it only from an address of a user its rules let
answer; mail to a start address starts a run; an oversized message is refused."""

from __future__ import annotations

import json
import re
import smtplib
import time
from email.message import EmailMessage

import pytest

from conftest import SMTP_PASSWORD, email_yaml, free_port

FIELDS = [{"name": "answer", "type": "text", "required": True, "label": "Approve the ACME contract?"}]


def _config_text(sink_port: int, listen_port: int) -> str:
    return email_yaml(sink_port, extra=f"""\
reply_domain: reply.example.com
ask_by_email: true
addresses:
  ann: ann@example.com
  bob: bob@example.com
inbound:
  host: 127.0.0.1
  port: {listen_port}
  max_bytes: 4096
  allowed_senders: [example.com]
  start:
    - {{address: intake@in.example.com, definition: mail_intake}}
""")


@pytest.fixture
def inbox(store, definitions, smtp_sink, monkeypatch):
    """The email configuration in the definitions folder, ann (legal) and bob (sales), and the
    listener of that configuration running; answers are recorded, and their hand-over to a
    waiting Prefect flow run is collected instead (the end-to-end test hands them over)."""
    from flows import humans, people
    from flows.email import config
    from flows.runs import answers
    from flows.triggers.email import EmailListener

    port = free_port()
    (definitions / "tools" / "email.yaml").write_text(_config_text(smtp_sink.port, port))
    monkeypatch.setenv("TEST_SMTP_PASSWORD", SMTP_PASSWORD)
    monkeypatch.setattr(config, "_configured", {})
    config.configure(definitions / "tools")
    people.add_user("ann", ["legal"])
    people.add_user("bob", ["sales"])
    delivered: list = []
    monkeypatch.setattr(humans, "on_answered", [])
    monkeypatch.setattr(answers, "deliver", delivered.append)
    listener = EmailListener(config.current()).start()
    yield port, delivered
    listener.stop()


def _mail(sender: str, to: str, body: str, *, header_from: str | None = None, subject: str = "Re: task") -> EmailMessage:
    msg = EmailMessage()
    msg["From"], msg["To"], msg["Subject"] = header_from or sender, to, subject
    msg.set_content(body)
    return msg


def _send(port: int, msg: EmailMessage, sender: str) -> None:
    with smtplib.SMTP("127.0.0.1", port, timeout=30) as client:
        client.send_message(msg, from_addr=sender, to_addrs=[str(msg["To"])])


def _task(assignee: str = "group:legal"):
    from flows.store import runs as run_store
    from flows.store import tasks as task_store

    run = run_store.create_run("contracts", started_by="starter")
    return task_store.create_task(run.id, "legal_review", "Approve the ACME contract?", description="Clause 7 changed.",
                                  assignee=assignee, fields=FIELDS)


def test_a_task_is_emailed_and_only_a_reply_from_a_user_who_may_answer_answers_it(inbox, smtp_sink):
    from flows.store import tasks as task_store

    port, delivered = inbox
    task = _task()
    (got,) = smtp_sink.wait_for(1)  # ann is legal's only member with an address; bob is in sales
    msg = got.message
    assert got.rcpt_tos == ["ann@example.com"] and msg["Subject"] == "[Ergon] Approve the ACME contract?"
    reply_to = str(msg["Reply-To"])
    found = re.fullmatch(rf"r\+{task.id}\.([a-z2-7]{{32}})@reply\.example\.com", reply_to)
    assert found, reply_to
    text = msg.get_body(preferencelist=("plain",)).get_content()
    assert "Clause 7 changed." in text and "Reply to this email to answer" in text
    events = task_store.task_events(task.id)
    assert [e.action for e in events] == ["created", "emailed"]
    assert found[1] not in json.dumps([e.detail for e in events])  # the store keeps the token's digest only

    # a user of an allowed domain whom the task's rules refuse: refused, recorded, the task stays open
    with pytest.raises(smtplib.SMTPDataError) as refused:
        _send(port, _mail("bob@example.com", reply_to, "Approved."), "bob@example.com")
    assert refused.value.smtp_code == 550 and b"not a member" in refused.value.smtp_error
    # a sender outside allowed_senders: refused before the message is read
    with pytest.raises(smtplib.SMTPSenderRefused):
        _send(port, _mail("eve@evil.test", reply_to, "Approved."), "eve@evil.test")
    # an address of no user
    with pytest.raises(smtplib.SMTPDataError, match="not the address of an Ergon user"):
        _send(port, _mail("carol@example.com", reply_to, "Approved."), "carol@example.com")
    # the right task with a token that is not its own
    forged = reply_to.replace(found[1], "a" * 32)
    with pytest.raises(smtplib.SMTPRecipientsRefused):
        _send(port, _mail("ann@example.com", forged, "Approved."), "ann@example.com")
    # ann's From header claiming another address than the envelope's sender
    with pytest.raises(smtplib.SMTPDataError, match="From header"):
        _send(port, _mail("bob@example.com", reply_to, "Approved.", header_from="ann@example.com"), "bob@example.com")
    assert task_store.get_task(task.id).status == "pending" and delivered == []
    refusals = [e.detail for e in task_store.task_events(task.id) if e.action == "refused"]
    assert [(d["via"], d["action"]) for d in refusals] == [("email", "answer"), ("email", "answer")]

    # ann's reply: the text above the quoted original is the answer
    _send(port, _mail("ann@example.com", reply_to, "Approved, clause 7 is fine.\n\nOn Monday Ergon wrote:\n> Approve?\n"),
          "ann@example.com")
    done = task_store.get_task(task.id)
    assert (done.status, done.answered_by, done.answered_via) == ("completed", "ann", "email")
    assert done.answer == {"answer": "Approved, clause 7 is fine."}
    assert [t.id for t in delivered] == [task.id]  # handed to the waiting run
    with pytest.raises(smtplib.SMTPDataError, match="already answered"):
        _send(port, _mail("ann@example.com", reply_to, "Again."), "ann@example.com")


def test_a_task_for_someone_without_an_address_is_not_emailed(inbox, smtp_sink):
    from flows.store import tasks as task_store

    task = _task(assignee="group:sales_ops")
    assert [e.action for e in task_store.task_events(task.id)] == ["created"]
    assert smtp_sink.messages == []


def test_an_oversized_message_is_refused_and_answers_nothing(inbox, smtp_sink):
    from flows.store import tasks as task_store

    port, delivered = inbox
    task = _task()
    reply_to = str(smtp_sink.wait_for(1)[0].message["Reply-To"])
    with pytest.raises((smtplib.SMTPSenderRefused, smtplib.SMTPDataError)) as refused:
        _send(port, _mail("ann@example.com", reply_to, "x" * 8000), "ann@example.com")
    assert refused.value.smtp_code == 552
    assert task_store.get_task(task.id).status == "pending" and delivered == []


def test_field_lines_and_the_free_text_of_a_reply():
    from flows.email.asking import answer_from_reply
    from flows.humans import normalize_fields

    fields = normalize_fields([{"name": "decision", "type": "select", "options": ["approve", "reject"], "required": True},
                               {"name": "notes", "type": "text"}])
    text = "Decision: approve\nLooks fine to me.\nThanks\n-- \nAnn\n"
    assert answer_from_reply(text, fields) == {"decision": "approve", "notes": "Looks fine to me.\nThanks"}
    assert answer_from_reply("answer: yes\n> quoted: no", normalize_fields(FIELDS)) == {"answer": "yes"}


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
  note: {type: tool, tool: mark, input: {name: "{{ email.subject }} / {{ email.body }}"}, writes: [last]}
"""


@pytest.mark.prefect
def test_mail_to_a_start_address_starts_a_run_with_the_email_as_input(prefect_api, inbox, definitions):
    from flows.store import runs as run_store

    port, _ = inbox
    (definitions / "mail_intake.yaml").write_text(INTAKE)
    msg = _mail("ann@example.com", "intake@in.example.com", "Please process invoice 42.", subject="Invoice 42")
    with smtplib.SMTP("127.0.0.1", port, timeout=60) as client:
        client.ehlo()
        code, answer = client.mail("ann@example.com")[0], None
        client.rcpt("intake@in.example.com")
        code, answer = client.data(msg.as_bytes())
    assert code == 250, answer
    run_id = re.search(rb"Started run ([0-9a-f]{32})", answer)[1].decode()
    deadline = time.monotonic() + 90
    while run_store.get_run(run_id).status not in ("completed", "failed") and time.monotonic() < deadline:
        time.sleep(0.3)
    run = run_store.get_run(run_id)
    assert (run.status, run.trigger, run.started_by) == ("completed", "email", "ann"), run.error
    assert run.context["email"]["from"] == "ann@example.com" and run.context["email"]["subject"] == "Invoice 42"
    assert run.context["last"] == "Invoice 42 / Please process invoice 42."
    # a sender whose address is no user's starts nothing
    with pytest.raises(smtplib.SMTPDataError, match="not the address of an Ergon user"):
        _send(port, _mail("carol@example.com", "intake@in.example.com", "Hi"), "carol@example.com")
    assert len(run_store.list_runs(definition="mail_intake", limit=10)[0]) == 1



def test_the_text_of_an_html_only_message_leaves_out_what_is_not_shown():
    from flows.triggers.email import body_text

    msg = EmailMessage()
    msg.set_content("<html><head><style>p {color: red}</style></head><body><p>Approved.</p>"
                    "<script>steal()</script><div>Ann</div></body></html>", subtype="html")
    assert body_text(msg) == "Approved.\nAnn"
