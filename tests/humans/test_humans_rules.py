"""Who may see, take and answer a task; refusals change nothing but the audit trail."""

from __future__ import annotations

import pytest

from flows import humans
from flows.store import tasks as task_store


def _events(task_id):
    return [(e.action, e.actor) for e in task_store.task_events(task_id)]


@pytest.mark.parametrize(("assignee", "visible"), [
    ("group:legal", {"ann", "starter", "root"}),
    ("bob", {"bob", "root"}),
    (None, {"ann", "bob", "root", "starter", "stranger"}),
    ("group:nobody", {"root"}),
])
def test_visibility_matches_the_store_listing(make_task, assignee, visible):
    task = make_task(assignee)
    for user in ("ann", "bob", "root", "starter", "stranger"):
        assert humans.can_see(task, user) is (user in visible), user
        listed = [t.id for t in task_store.list_tasks("open", visible_to=user)[0]]
        assert (task.id in listed) is (user in visible), user


def test_can_answer_rules(make_task):
    legal = make_task("group:legal")
    assert humans.can_answer(legal, "ann", "starter") == (True, "")
    ok, reason = humans.can_answer(legal, "bob", "starter")
    assert not ok and "group legal" in reason and "bob is not a member" in reason
    assert humans.can_answer(legal, "root", "starter")[0]  # admin
    assert humans.can_answer(make_task(None), "stranger", "starter")[0]  # unassigned: anyone
    personal = make_task("bob")
    assert humans.can_answer(personal, "bob", "starter")[0]
    assert "assigned to bob, not ann" in humans.can_answer(personal, "ann", "starter")[1]


def test_four_eyes_refuses_the_starter_even_an_admin(make_task):
    task = make_task("group:legal", four_eyes=True)
    ok, reason = humans.can_answer(task, "starter", "starter")
    assert not ok and reason.startswith("four-eyes")
    assert humans.can_answer(task, "ann", "starter")[0]
    admin_run = make_task(None, four_eyes=True, started_by="root")
    assert not humans.can_answer(admin_run, "root", "root")[0]
    with pytest.raises(humans.TaskRefused, match="four-eyes"):
        humans.answer(task.id, "starter", {"decision": "approve"})
    with pytest.raises(humans.TaskRefused, match="four-eyes"):
        humans.claim(task.id, "starter")
    assert task_store.get_task(task.id).status == "pending"
    # without four_eyes the starter may answer their own run's task
    assert humans.can_answer(make_task("group:legal"), "starter", "starter")[0]


def test_claim_then_only_the_holder_or_an_admin_answers(make_task):
    task = make_task("group:legal")
    with pytest.raises(humans.TaskRefused, match="not a member"):
        humans.claim(task.id, "bob")
    claimed = humans.claim(task.id, "ann")
    assert (claimed.status, claimed.claimed_by) == ("in_progress", "ann")
    assert humans.claim(task.id, "ann").claimed_by == "ann"  # again: no-op
    with pytest.raises(humans.TaskRefused, match="already taken by ann"):
        humans.claim(task.id, "starter")
    with pytest.raises(humans.TaskRefused, match="taken by ann"):
        humans.answer(task.id, "starter", {"decision": "approve"})
    result = humans.answer(task.id, "root", {"decision": "reject"}, via="dashboard")
    assert (result.task.answered_by, result.task.answered_via) == ("root", "dashboard")


def test_answer_records_who_when_what_and_runs_the_hooks(make_task, monkeypatch):
    seen = []
    monkeypatch.setattr(humans, "on_answered", [lambda t: seen.append((t.id, t.status, t.answer))])
    task = make_task("group:legal")
    result = humans.answer(task.id, "ann", {"decision": "approve", "urgent": "yes", "copies": "2"})
    stored = task_store.get_task(task.id)
    expected = {"decision": "approve", "notes": "", "urgent": True, "amount": 10.0, "copies": 2}
    assert stored.status == "completed" and stored.answer == expected == result.answer
    assert stored.answered_by == "ann" and stored.answered_via == "cli" and stored.answered_at is not None
    assert seen == [(task.id, "completed", expected)]
    assert result.hook_errors == []


def test_failing_hook_keeps_the_answer_and_is_reported(make_task, monkeypatch):
    def resume(task):
        raise RuntimeError("prefect is down")

    monkeypatch.setattr(humans, "on_answered", [resume])
    task = make_task(None)
    result = humans.answer(task.id, "ann", {"decision": "approve"})
    assert result.hook_errors == ["resume: prefect is down"]
    assert task_store.get_task(task.id).status == "completed"


def test_second_answer_is_refused_and_nothing_changes(make_task, monkeypatch):
    calls = []
    monkeypatch.setattr(humans, "on_answered", [calls.append])
    task = make_task("group:legal")
    humans.answer(task.id, "ann", {"decision": "approve", "notes": "fine"})
    before = task_store.get_task(task.id).model_dump()
    with pytest.raises(humans.TaskRefused, match="already answered by ann") as info:
        humans.answer(task.id, "root", {"decision": "reject"})
    assert info.value.task_id == task.id
    assert task_store.get_task(task.id).model_dump() == before
    assert len(calls) == 1
    with pytest.raises(humans.TaskRefused, match="already answered"):
        humans.claim(task.id, "ann")


def test_invalid_answer_is_refused_with_reasons_and_task_stays_open(make_task, monkeypatch):
    calls = []
    monkeypatch.setattr(humans, "on_answered", [calls.append])
    task = make_task("group:legal")
    with pytest.raises(humans.TaskRefused) as info:
        humans.answer(task.id, "ann", {"decision": "maybe", "bogus": 1})
    assert info.value.reason.startswith("invalid answer")
    assert any("not one of: approve, reject" in e for e in info.value.errors)
    assert any(e.startswith("bogus: unknown field") for e in info.value.errors)
    stored = task_store.get_task(task.id)
    assert (stored.status, stored.answer, stored.answered_by) == ("pending", None, None)
    assert calls == []


def test_audit_trail(make_task):
    task = make_task("group:legal")
    with pytest.raises(humans.TaskRefused):
        humans.claim(task.id, "bob")
    humans.claim(task.id, "ann")
    with pytest.raises(humans.TaskRefused):
        humans.answer(task.id, "ann", {}, via="dashboard")
    humans.answer(task.id, "ann", {"decision": "approve"})
    with pytest.raises(humans.TaskRefused):
        humans.answer(task.id, "starter", {"decision": "reject"})
    assert _events(task.id) == [("created", None), ("refused", "bob"), ("claimed", "ann"), ("refused", "ann"),
                                ("answered", "ann"), ("refused", "starter")]
    refusals = [e.detail for e in task_store.task_events(task.id) if e.action == "refused"]
    assert refusals[0]["action"] == "claim" and "not a member" in refusals[0]["reason"]
    assert refusals[1] == {"action": "answer", "reason": "invalid answer: decision: required",
                           "errors": ["decision: required"], "via": "dashboard"}
    assert refusals[2]["action"] == "answer" and "already answered" in refusals[2]["reason"]


def test_closed_and_unknown_tasks(make_task):
    task = make_task(None)
    task_store.close_task(task.id, "cancelled", actor="root")
    with pytest.raises(humans.TaskRefused, match="is cancelled"):
        humans.answer(task.id, "ann", {"decision": "approve"})
    with pytest.raises(humans.TaskNotFound):
        humans.answer("nope", "ann", {})
    with pytest.raises(humans.TaskNotFound):
        humans.claim("nope", "ann")


def test_unknown_os_user_acts_on_unassigned_and_own_tasks(make_task):
    assert humans.actor("stranger") == humans.Actor("stranger")
    assert humans.answer(make_task("stranger").id, "stranger", {"decision": "approve"}).task.status == "completed"
    with pytest.raises(humans.TaskRefused):
        humans.answer(make_task("group:legal").id, "stranger", {"decision": "approve"})


def test_an_answer_through_prefect_is_held_to_the_same_rules(make_task):
    """What the engine does with an answer from Prefect's form: the approver's token (its
    SHA-256) proves who answers where the task names an assignee or four-eyes."""
    from flows import tokens
    from flows.store import tokens as token_store

    def sha(token: str) -> str:
        return tokens.hash_token(token)

    ann, starter, bob = (tokens.create(n).token for n in ("ann", "starter", "bob"))
    task = make_task("group:legal", four_eyes=True)
    assert humans.needs_proof(task)
    for token_sha, reason in [(None, "needs the approver's personal token"), (sha("ergon_forged"), "token was refused"),
                              (sha(bob), "bob is not a member"), (sha(starter), "four-eyes")]:
        with pytest.raises(humans.TaskRefused, match=reason):
            humans.answer_through_prefect(task.id, {"decision": "approve"}, token_sha256=token_sha)
    with pytest.raises(humans.TaskRefused, match="invalid answer"):
        humans.answer_through_prefect(task.id, {"decision": "maybe"}, token_sha256=sha(ann))
    refused = [e for e in task_store.task_events(task.id) if e.action == "refused"]
    assert [(e.actor, e.detail["via"]) for e in refused] == [("prefect", "prefect"), ("prefect", "prefect"),
                                                            ("bob", "prefect"), ("starter", "prefect"), ("ann", "prefect")]
    assert task_store.get_task(task.id).status == "pending"
    revoked = tokens.create("ann")
    token_store.revoke_token(revoked.row.id, by="ann")
    with pytest.raises(humans.TaskRefused, match="revoked"):
        humans.answer_through_prefect(task.id, {"decision": "approve"}, token_sha256=sha(revoked.token))
    done = humans.answer_through_prefect(task.id, {"decision": "approve"}, token_sha256=sha(ann))
    assert done.answered_by == "ann" and done.answered_via == "prefect" and done.answer["decision"] == "approve"

    open_task = make_task(None)
    assert not humans.needs_proof(open_task)
    assert humans.answer_through_prefect(open_task.id, {"decision": "reject"}, token_sha256=None).answered_by == "prefect"
