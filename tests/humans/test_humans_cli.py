"""`ergon tasks list|show|claim|answer` as a user proven by a token (``--token``, ``ERGON_TOKEN``), with the
dashboard's rules."""

from __future__ import annotations

import json

import pytest

from flows.cli import run as cli
from flows.store import tasks as task_store


def _json(capsys):
    return json.loads(capsys.readouterr().out)


def test_list_shows_only_visible_tasks_and_filters_status(make_task, capsys, monkeypatch, tokens):
    legal, bobs, anyone = make_task("group:legal"), make_task("bob"), make_task(None)
    assert cli(["tasks", "list", "--token", tokens["ann"], "--json"]) == 0
    data = _json(capsys)
    assert data["user"] == "ann" and {t["id"] for t in data["tasks"]} == {legal.id, anyone.id} and data["total"] == 2
    monkeypatch.setenv("ERGON_TOKEN", tokens["bob"])
    assert cli(["tasks", "list", "--json"]) == 0
    assert {t["id"] for t in _json(capsys)["tasks"]} == {bobs.id, anyone.id}
    assert cli(["tasks", "list", "--token", tokens["root"], "--json"]) == 0
    assert _json(capsys)["total"] == 3
    # status filters
    assert cli(["tasks", "claim", legal.id, "--token", tokens["ann"]]) == 0
    assert cli(["tasks", "answer", anyone.id, "--token", tokens["ann"], "--set", "decision=approve"]) == 0
    capsys.readouterr()
    for status, expected in [("open", {legal.id}), ("pending", set()), ("in_progress", {legal.id}),
                             ("completed", {anyone.id}), ("cancelled", set()), ("all", {legal.id, anyone.id})]:
        assert cli(["tasks", "list", "--token", tokens["ann"], "--status", status, "--json"]) == 0
        assert {t["id"] for t in _json(capsys)["tasks"]} == expected, status
    assert cli(["tasks", "list", "--token", tokens["ann"], "--status", "weird"]) == 2
    assert cli(["tasks", "list", "--token", tokens["ann"]]) == 0
    out = capsys.readouterr().out
    assert legal.id in out and "1 of 1 open task(s) for ann" in out


def test_show(make_task, capsys, tokens):
    task = make_task("group:legal", four_eyes=True)
    assert cli(["tasks", "show", task.id, "--token", tokens["ann"], "--json"]) == 0
    data = _json(capsys)
    assert data["task"]["title"] == "Review ACME / Globex" and data["task"]["description"] == "Please review."
    assert [f["name"] for f in data["task"]["fields"]] == ["decision", "notes", "urgent", "amount", "copies"]
    assert data["context"] == {"parties": "ACME / Globex"} and data["run"]["started_by"] == "starter"
    assert data["may_answer"] is True and [e["action"] for e in data["events"]] == ["created"]
    assert cli(["tasks", "show", task.id, "--token", tokens["starter"]]) == 0
    out = capsys.readouterr().out
    assert "Review ACME / Globex" in out and "decision — Decision (select; required; one of: approve, reject)" in out
    assert "four-eyes" in out and "starter may not answer" in out and '"parties": "ACME / Globex"' in out
    assert cli(["tasks", "show", task.id, "--token", tokens["bob"]]) == 1
    assert "bob may not see task" in capsys.readouterr().err
    assert cli(["tasks", "show", "nope", "--token", tokens["ann"]]) == 2


def test_claim_and_answer(make_task, capsys, tokens):
    task = make_task("group:legal")
    assert cli(["tasks", "claim", task.id, "--token", tokens["bob"]]) == 1
    assert "not a member" in capsys.readouterr().err
    assert task_store.get_task(task.id).status == "pending"
    assert cli(["tasks", "claim", task.id, "--token", tokens["ann"]]) == 0
    assert "taken by ann" in capsys.readouterr().out
    assert cli(["tasks", "answer", task.id, "--token", tokens["ann"], "--set", "decision=approve", "--set", "urgent=yes",
                "--set", "amount=12.5", "--set", "copies=3", "--set", "notes=a=b, c", "--json"]) == 0
    data = _json(capsys)
    assert data["status"] == "completed" and data["answered_by"] == "ann" and data["answered_at"]
    assert data["answer"] == {"decision": "approve", "notes": "a=b, c", "urgent": True, "amount": 12.5, "copies": 3}
    stored = task_store.get_task(task.id)
    assert stored.answered_via == "cli" and stored.answer == data["answer"]
    # a second answer is refused; nothing changes
    assert cli(["tasks", "answer", task.id, "--token", tokens["root"], "--set", "decision=reject"]) == 1
    assert "already answered by ann" in capsys.readouterr().err
    assert task_store.get_task(task.id).answer == data["answer"]


def test_invalid_answers_exit_1_with_reasons(make_task, capsys, tokens):
    task = make_task(None)
    assert cli(["tasks", "answer", task.id, "--token", tokens["ann"], "--set", "decision=maybe", "--set", "urgent=perhaps",
                "--set", "colour=red"]) == 1
    err = capsys.readouterr().err
    assert "invalid answer" in err and "'maybe' is not one of: approve, reject" in err
    assert "urgent: expected true or false" in err and "colour: unknown field" in err
    assert cli(["tasks", "answer", task.id, "--token", tokens["ann"], "--json"]) == 1
    data = _json(capsys)
    assert data["refused"] is True and data["errors"] == ["decision: required"]
    assert task_store.get_task(task.id).status == "pending"
    assert cli(["tasks", "answer", task.id, "--token", tokens["ann"], "--set", "decision"]) == 2
    assert cli(["tasks", "answer", task.id, "--token", tokens["ann"], "--set", "decision=approve", "--set", "decision=reject"]) == 2
    assert cli(["tasks", "answer", "nope", "--token", tokens["ann"], "--set", "decision=approve"]) == 2
    assert [e.action for e in task_store.task_events(task.id)] == ["created", "refused", "refused"]


def test_four_eyes_on_the_cli(make_task, capsys, monkeypatch, tokens):
    task = make_task("group:legal", four_eyes=True)
    monkeypatch.setenv("ERGON_TOKEN", tokens["starter"])
    assert cli(["tasks", "answer", task.id, "--set", "decision=approve"]) == 1
    assert "four-eyes" in capsys.readouterr().err
    assert cli(["tasks", "answer", task.id, "--token", tokens["ann"], "--set", "decision=approve"]) == 0


def test_hook_failure_is_reported(make_task, capsys, monkeypatch, tokens):
    from flows import humans

    def resume(task):
        raise RuntimeError("no paused flow run")

    monkeypatch.setattr(humans, "on_answered", [resume])
    task = make_task(None)
    assert cli(["tasks", "answer", task.id, "--token", tokens["ann"], "--set", "decision=approve"]) == 1
    assert "recorded, but the run was not resumed" in capsys.readouterr().err
    assert task_store.get_task(task.id).status == "completed"


@pytest.mark.parametrize("cmd", [["tasks", "--help"], ["users", "--help"]])
def test_help(cmd, capsys):
    assert cli(cmd) == 0
    assert "Usage" in capsys.readouterr().out
