"""Human tasks and their audit trail, users and groups, secrets, trigger state, definitions."""

from __future__ import annotations

import pytest

from flows.store import db
from flows.store import definitions as definition_store
from flows.store import people as people_store
from flows.store import runs as run_store
from flows.store import secrets as secret_store
from flows.store import tasks as task_store
from flows.store import triggers as trigger_store
from flows.store.errors import NotFound, StoreError, TaskConflict


@pytest.fixture
def run(store):
    return run_store.create_run("d")


@pytest.fixture
def people(store):
    people_store.upsert_user("ann")
    people_store.upsert_user("bob")
    people_store.upsert_user("root", is_admin=True)
    people_store.add_to_group("ann", "legal")
    people_store.add_to_group("ann", "legal")  # twice: still one membership


def test_users_and_groups(people):
    assert [u.name for u in people_store.list_users()] == ["ann", "bob", "root"]
    assert people_store.groups_of("ann") == ["legal"] and people_store.members_of("legal") == ["ann"]
    people_store.upsert_user("ann", display_name="Ann A.")
    assert people_store.get_user("ann").display_name == "Ann A." and people_store.get_user("ann").is_admin is False
    people_store.remove_from_group("ann", "legal")
    assert people_store.groups_of("ann") == []
    with pytest.raises(NotFound):
        people_store.add_to_group("nobody", "legal")


def test_task_lifecycle_and_audit_trail(run, people):
    task = task_store.create_task(run.id, "approve", "Approve ACME?", description="**Amount** 10", assignee="group:legal",
                                  fields=[{"name": "ok", "type": "boolean", "required": True}], pause_key="pk-1")
    assert task_store.task_by_pause_key("pk-1").id == task.id
    claimed = task_store.claim_task(task.id, "ann")
    assert (claimed.status, claimed.claimed_by) == ("in_progress", "ann")
    assert task_store.claim_task(task.id, "ann").status == "in_progress"  # again: no-op
    with pytest.raises(TaskConflict, match="in_progress by ann"):
        task_store.claim_task(task.id, "bob")
    task_store.record_task_event(task.id, "refused", actor="ann", detail={"errors": ["ok is required"]})
    answered = task_store.answer_task(task.id, {"ok": True}, answered_by="ann", answered_via="cli")
    assert (answered.status, answered.answer, answered.answered_via) == ("completed", {"ok": True}, "cli")
    assert answered.answered_at is not None
    with pytest.raises(TaskConflict, match="already completed"):
        task_store.answer_task(task.id, {"ok": False}, answered_by="bob", answered_via="dashboard")
    assert [e.action for e in task_store.task_events(task.id)] == ["created", "claimed", "refused", "answered"]
    with pytest.raises(StoreError, match="answer channel"):
        task_store.answer_task(task.id, {}, answered_by="x", answered_via="carrier-pigeon")


def test_close_task(run):
    task = task_store.create_task(run.id, "approve", "t")
    assert task_store.close_task(task.id, "expired", reason="due").status == "expired"
    with pytest.raises(TaskConflict):
        task_store.close_task(task.id, "cancelled")
    with pytest.raises(StoreError):
        task_store.close_task(task.id, "completed")


def test_task_filters_and_visibility(run, people):
    legal = task_store.create_task(run.id, "a", "legal", assignee="group:legal")
    bobs = task_store.create_task(run.id, "b", "bob's", assignee="bob")
    anyone = task_store.create_task(run.id, "c", "anyone")
    done = task_store.create_task(run.id, "d", "done", assignee="ann")
    task_store.answer_task(done.id, {}, answered_by="ann", answered_via="api")
    task_store.claim_task(bobs.id, "bob")

    def ids(status="open", **kw):
        return {t.id for t in task_store.list_tasks(status, **kw)[0]}

    assert ids() == {legal.id, bobs.id, anyone.id}
    assert ids("pending") == {legal.id, anyone.id}
    assert ids("in_progress") == {bobs.id}
    assert ids("completed") == {done.id}
    assert ids("all") == {legal.id, bobs.id, anyone.id, done.id}
    assert ids("all", visible_to="ann") == {legal.id, anyone.id, done.id}
    assert ids("all", visible_to="bob") == {bobs.id, anyone.id}
    assert ids("all", visible_to="root") == ids("all")
    assert ids("all", visible_to="stranger") == {anyone.id}
    rows, total = task_store.list_tasks("all", limit=1)
    assert total == 4 and [t.id for t in rows] == [done.id]  # newest first
    assert [t.id for t in task_store.tasks_for_run(run.id)] == [legal.id, bobs.id, anyone.id, done.id]
    with pytest.raises(StoreError, match="task filter"):
        task_store.list_tasks("mine")


def test_secrets_keep_ciphertext_only(store):
    secret_store.put_secret("openai_api_key", b"S1\x02k1\x00\xffsealed", "k1")
    secret_store.put_secret("openai_api_key", b"S1\x02k2resealed", "k2")
    got = secret_store.get_secret("openai_api_key")
    assert (got.ciphertext, got.key_id) == (b"S1\x02k2resealed", "k2")
    assert got.updated_at >= got.created_at
    assert [s.name for s in secret_store.list_secrets()] == ["openai_api_key"]
    assert secret_store.delete_secret("openai_api_key") is True and secret_store.delete_secret("openai_api_key") is False
    with db.get_engine(store).connect() as conn:
        columns = [row[1] for row in conn.exec_driver_sql("PRAGMA table_info(secrets)")]
    assert "plaintext" not in columns and "value" not in columns


def test_trigger_state(store):
    with pytest.raises(StoreError, match="kind"):
        trigger_store.upsert_trigger_state("nightly", 0, paused=True)
    trigger_store.upsert_trigger_state("nightly", 0, kind="cron", created_by="ann")
    trigger_store.upsert_trigger_state("nightly", 1, kind="webhook")
    state = trigger_store.upsert_trigger_state("nightly", 0, paused=True, last_run_id="r1")
    assert (state.kind, state.paused, state.last_run_id, state.created_by) == ("cron", True, "r1", "ann")
    assert [(t.trigger_index, t.kind) for t in trigger_store.list_trigger_states("nightly")] == [(0, "cron"), (1, "webhook")]
    with pytest.raises(StoreError, match="no field"):
        trigger_store.upsert_trigger_state("nightly", 0, schedule="* * * * *")


def test_drafts_and_published_versions(store):
    definition_store.save_draft("contract_review", "process", {"v": 1})
    v1 = definition_store.publish_definition("contract_review", comment="first", published_by="ann")
    definition_store.save_draft("contract_review", "process", {"v": 2})
    v2 = definition_store.publish_definition("contract_review")
    assert (v1.version, v2.version, v1.content, v2.content) == (1, 2, {"v": 1}, {"v": 2})
    assert definition_store.get_version("contract_review").version == 2
    assert definition_store.get_version("contract_review", 1).comment == "first"
    assert [v.version for v in definition_store.list_versions("contract_review")] == [2, 1]
    assert definition_store.get_snapshot(v1.content_hash) == {"v": 1}
    d = definition_store.get_definition("contract_review")
    assert d.draft_content == {"v": 2} and d.draft_hash == v2.content_hash
    assert [x.name for x in definition_store.list_definitions()] == ["contract_review"]
    with pytest.raises(NotFound):
        definition_store.publish_definition("unknown")
    run = run_store.create_run("contract_review", definition_version=1, content_hash=v1.content_hash)
    assert definition_store.get_snapshot(run_store.get_run(run.id).content_hash) == {"v": 1}
