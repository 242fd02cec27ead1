"""Human tasks and their audit trail, users and groups, secrets, trigger state, definitions."""

from __future__ import annotations

import pytest

from flows.store import db, repo


@pytest.fixture
def run(store):
    return repo.create_run("d")


@pytest.fixture
def people(store):
    repo.upsert_user("ann")
    repo.upsert_user("bob")
    repo.upsert_user("root", is_admin=True)
    repo.add_to_group("ann", "legal")
    repo.add_to_group("ann", "legal")  # twice: still one membership


def test_users_and_groups(people):
    assert [u.name for u in repo.list_users()] == ["ann", "bob", "root"]
    assert repo.groups_of("ann") == ["legal"] and repo.members_of("legal") == ["ann"]
    repo.upsert_user("ann", display_name="Ann A.")
    assert repo.get_user("ann").display_name == "Ann A." and repo.get_user("ann").is_admin is False
    repo.remove_from_group("ann", "legal")
    assert repo.groups_of("ann") == []
    with pytest.raises(repo.NotFound):
        repo.add_to_group("nobody", "legal")


def test_task_lifecycle_and_audit_trail(run, people):
    task = repo.create_task(run.id, "approve", "Approve ACME?", description="**Amount** 10", assignee="group:legal",
                            fields=[{"name": "ok", "type": "boolean", "required": True}], pause_key="pk-1")
    assert repo.task_by_pause_key("pk-1").id == task.id
    claimed = repo.claim_task(task.id, "ann")
    assert (claimed.status, claimed.claimed_by) == ("in_progress", "ann")
    assert repo.claim_task(task.id, "ann").status == "in_progress"  # again: no-op
    with pytest.raises(repo.TaskConflict, match="in_progress by ann"):
        repo.claim_task(task.id, "bob")
    repo.record_task_event(task.id, "refused", actor="ann", detail={"errors": ["ok is required"]})
    answered = repo.answer_task(task.id, {"ok": True}, answered_by="ann", answered_via="cli")
    assert (answered.status, answered.answer, answered.answered_via) == ("completed", {"ok": True}, "cli")
    assert answered.answered_at is not None
    with pytest.raises(repo.TaskConflict, match="already completed"):
        repo.answer_task(task.id, {"ok": False}, answered_by="bob", answered_via="dashboard")
    assert [e.action for e in repo.task_events(task.id)] == ["created", "claimed", "refused", "answered"]
    with pytest.raises(repo.StoreError, match="answer channel"):
        repo.answer_task(task.id, {}, answered_by="x", answered_via="carrier-pigeon")


def test_close_task(run):
    task = repo.create_task(run.id, "approve", "t")
    assert repo.close_task(task.id, "expired", reason="due").status == "expired"
    with pytest.raises(repo.TaskConflict):
        repo.close_task(task.id, "cancelled")
    with pytest.raises(repo.StoreError):
        repo.close_task(task.id, "completed")


def test_task_filters_and_visibility(run, people):
    legal = repo.create_task(run.id, "a", "legal", assignee="group:legal")
    bobs = repo.create_task(run.id, "b", "bob's", assignee="bob")
    anyone = repo.create_task(run.id, "c", "anyone")
    done = repo.create_task(run.id, "d", "done", assignee="ann")
    repo.answer_task(done.id, {}, answered_by="ann", answered_via="api")
    repo.claim_task(bobs.id, "bob")

    def ids(status="open", **kw):
        return {t.id for t in repo.list_tasks(status, **kw)[0]}

    assert ids() == {legal.id, bobs.id, anyone.id}
    assert ids("pending") == {legal.id, anyone.id}
    assert ids("in_progress") == {bobs.id}
    assert ids("completed") == {done.id}
    assert ids("all") == {legal.id, bobs.id, anyone.id, done.id}
    assert ids("all", visible_to="ann") == {legal.id, anyone.id, done.id}
    assert ids("all", visible_to="bob") == {bobs.id, anyone.id}
    assert ids("all", visible_to="root") == ids("all")
    assert ids("all", visible_to="stranger") == {anyone.id}
    rows, total = repo.list_tasks("all", limit=1)
    assert total == 4 and [t.id for t in rows] == [done.id]  # newest first
    assert [t.id for t in repo.tasks_for_run(run.id)] == [legal.id, bobs.id, anyone.id, done.id]
    with pytest.raises(repo.StoreError, match="task filter"):
        repo.list_tasks("mine")


def test_secrets_keep_ciphertext_only(store):
    repo.put_secret("openai_api_key", b"S1\x02k1\x00\xffsealed", "k1")
    repo.put_secret("openai_api_key", b"S1\x02k2resealed", "k2")
    got = repo.get_secret("openai_api_key")
    assert (got.ciphertext, got.key_id) == (b"S1\x02k2resealed", "k2")
    assert got.updated_at >= got.created_at
    assert [s.name for s in repo.list_secrets()] == ["openai_api_key"]
    assert repo.delete_secret("openai_api_key") is True and repo.delete_secret("openai_api_key") is False
    with db.get_engine(store).connect() as conn:
        columns = [row[1] for row in conn.exec_driver_sql("PRAGMA table_info(secrets)")]
    assert "plaintext" not in columns and "value" not in columns


def test_trigger_state(store):
    with pytest.raises(repo.StoreError, match="kind"):
        repo.upsert_trigger_state("nightly", 0, paused=True)
    repo.upsert_trigger_state("nightly", 0, kind="cron", created_by="ann")
    repo.upsert_trigger_state("nightly", 1, kind="webhook")
    state = repo.upsert_trigger_state("nightly", 0, paused=True, last_run_id="r1")
    assert (state.kind, state.paused, state.last_run_id, state.created_by) == ("cron", True, "r1", "ann")
    assert [(t.trigger_index, t.kind) for t in repo.list_trigger_states("nightly")] == [(0, "cron"), (1, "webhook")]
    with pytest.raises(repo.StoreError, match="no field"):
        repo.upsert_trigger_state("nightly", 0, schedule="* * * * *")


def test_drafts_and_published_versions(store):
    repo.save_draft("contract_review", "process", {"v": 1})
    v1 = repo.publish_definition("contract_review", comment="first", published_by="ann")
    repo.save_draft("contract_review", "process", {"v": 2})
    v2 = repo.publish_definition("contract_review")
    assert (v1.version, v2.version, v1.content, v2.content) == (1, 2, {"v": 1}, {"v": 2})
    assert repo.get_version("contract_review").version == 2
    assert repo.get_version("contract_review", 1).comment == "first"
    assert [v.version for v in repo.list_versions("contract_review")] == [2, 1]
    assert repo.get_snapshot(v1.content_hash) == {"v": 1}
    d = repo.get_definition("contract_review")
    assert d.draft_content == {"v": 2} and d.draft_hash == v2.content_hash
    assert [x.name for x in repo.list_definitions()] == ["contract_review"]
    with pytest.raises(repo.NotFound):
        repo.publish_definition("unknown")
    run = repo.create_run("contract_review", definition_version=1, content_hash=v1.content_hash)
    assert repo.get_snapshot(repo.get_run(run.id).content_hash) == {"v": 1}
