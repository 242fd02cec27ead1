"""Who may see, take and answer a task; refusals change nothing but the audit trail."""

from __future__ import annotations

import pytest

from flows import humans
from flows.store import db
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
    assert "`ergon users add bob --group legal`" in reason  # the command that lets bob answer
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
    """What the engine does with an answer from Prefect's form: a one-time answer code (its
    SHA-256) proves who answers where the task names an assignee or four-eyes; the answer rules
    are applied again to whoever the code names."""
    from flows import answer_codes, tokens
    from flows.store.models import AnswerCode
    from flows.store import tokens as token_store

    def sha(code: str) -> str:
        return answer_codes.hash_code(code)

    task = make_task("group:legal", four_eyes=True)
    assert humans.needs_proof(task)
    # codes made directly, as if given while the rules allowed: the answer checks them again
    bob, starter = (answer_codes.issue(task.id, n).code for n in ("bob", "starter"))
    for code_sha, reason in [(None, "needs a one-time code from `ergon tasks code"),
                             (sha("code_forged"), "not one this store gave"),
                             (sha(bob), "bob is not a member"), (sha(starter), "four-eyes")]:
        with pytest.raises(humans.TaskRefused, match=reason):
            humans.answer_through_prefect(task.id, {"decision": "approve"}, code_sha256=code_sha)
    with pytest.raises(humans.TaskRefused, match="used already"):  # a code answers once, accepted or not
        humans.answer_through_prefect(task.id, {"decision": "approve"}, code_sha256=sha(bob))
    ann = humans.answer_code(task.id, "ann").code
    with pytest.raises(humans.TaskRefused, match="invalid answer"):
        humans.answer_through_prefect(task.id, {"decision": "maybe"}, code_sha256=sha(ann))
    refused = [e for e in task_store.task_events(task.id) if e.action == "refused"]
    assert [(e.actor, e.detail["via"]) for e in refused] == [("prefect", "prefect"), ("prefect", "prefect"),
                                                            ("bob", "prefect"), ("starter", "prefect"),
                                                            ("prefect", "prefect"), ("ann", "prefect")]
    assert task_store.get_task(task.id).status == "pending"

    other = make_task("group:legal")
    with pytest.raises(humans.TaskRefused, match=f"given for task {other.id}, not this one"):
        humans.answer_through_prefect(task.id, {"decision": "approve"},
                                      code_sha256=sha(humans.answer_code(other.id, "ann").code))
    late = humans.answer_code(task.id, "ann")
    with db.session(write=True) as s:  # its 15 minutes are over
        row = s.get(AnswerCode, late.row.code_sha256)
        row.expires_at = row.created_at
    with pytest.raises(humans.TaskRefused, match="expired"):
        humans.answer_through_prefect(task.id, {"decision": "approve"}, code_sha256=sha(late.code))

    # a personal token typed into Prefect's form is refused, and revoked: Prefect keeps what it is sent
    leaked = tokens.create("ann")
    with pytest.raises(humans.TaskRefused, match="personal token .* Ergon revoked it"):
        humans.answer_through_prefect(task.id, {"decision": "approve"}, code_sha256=tokens.hash_token(leaked.token))
    assert token_store.get_token(leaked.row.id).revoked_at is not None

    done = humans.answer_through_prefect(task.id, {"decision": "approve"},
                                         code_sha256=sha(humans.answer_code(task.id, "ann").code))
    assert done.answered_by == "ann" and done.answered_via == "prefect" and done.answer["decision"] == "approve"

    with pytest.raises(humans.TaskRefused, match="is not a member"):  # a code is given only to who may answer
        humans.answer_code(make_task("group:legal").id, "bob")
    open_task = make_task(None)
    assert not humans.needs_proof(open_task)
    with pytest.raises(humans.TaskRefused, match="asks no code"):
        humans.answer_code(open_task.id, "ann")
    assert humans.answer_through_prefect(open_task.id, {"decision": "reject"}, code_sha256=None).answered_by == "prefect"
