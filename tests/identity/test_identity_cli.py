"""Who acts, proven (:mod:`flows.identity`, :mod:`flows.tokens`): real `ergon` processes on a real
store. Acting as someone else needs their password or token; ERGON_USER needs an admin's
binding; people are changed by admins only, and the first admin is made once."""

from __future__ import annotations

import getpass
import hashlib
import json
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest

from flows import people
from flows import tokens as token_auth
from flows.store import people as people_store
from flows.store import runs as run_store
from flows.store import tasks as task_store

ERGON = [sys.executable, "-m", "flows.cli"]
FIELDS = [{"name": "decision", "type": "select", "required": True, "options": ["approve", "reject"]}]
#: the OS user running the tests: none of the test's people may have its name (it acts as itself)
ME = getpass.getuser()


@pytest.fixture
def env(store) -> dict[str, str]:
    """An `ergon` process on the test's store, acting as nobody in particular (the OS user)."""
    base = {k: v for k, v in os.environ.items() if k not in ("ERGON_USER", "ERGON_TOKEN")}
    return {**base, "ERGON_DATABASE_URL": store, "COLUMNS": "200"}


@pytest.fixture
def staff(store) -> dict[str, str]:
    """boss (the first admin, password "boss-pw"), ann (legal, password "ann-pw"), bob (sales)."""
    assert ME not in ("boss", "ann", "bob", "eve", "mallory"), "the tests need people other than the OS user"
    people_store.create_first_admin("boss", password_hash=people.hash_password("boss-pw"))
    people.add_user("ann", ["legal"], password="ann-pw")
    people.add_user("bob", ["sales"])
    return {"boss": token_auth.create("boss").token, "ann": token_auth.create("ann").token,
            "bob": token_auth.create("bob").token}


@pytest.fixture
def task(staff):
    run = run_store.create_run("review", started_by="bob", context={})
    return task_store.create_task(run.id, "review", "Review", assignee="group:legal", fields=FIELDS)


def ergon(args: list[str], env: dict[str, str], stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(ERGON + args, env=env, input=stdin, capture_output=True, text=True, timeout=120)


def _unchanged(task) -> None:
    row = task_store.get_task(task.id)
    assert row.status == "pending" and row.claimed_by is None and row.answered_by is None


def test_as_without_a_credential_is_refused_and_the_task_is_unchanged(env, task):
    for args in (["tasks", "answer", task.id, "--set", "decision=approve", "--as", "ann"],
                 ["tasks", "claim", task.id, "--as", "ann"]):
        done = ergon(args, env)
        assert done.returncode == 1, done.stdout + done.stderr
        _unchanged(task)
        [line] = done.stderr.strip().splitlines()  # one line, no traceback
        assert "acting as ann needs ann's credential" in line and "--password-stdin" in line and "--token" in line


def test_as_with_the_right_password_or_token_is_accepted(env, task, staff):
    wrong = ergon(["tasks", "claim", task.id, "--as", "ann", "--password-stdin"], env, stdin="guess\n")
    assert wrong.returncode == 1 and "ann's password was not accepted" in wrong.stderr
    _unchanged(task)
    listed = ergon(["tasks", "list", "--as", "ann", "--password-stdin", "--json"], env, stdin="ann-pw\n")
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout)["user"] == "ann" and [t["id"] for t in json.loads(listed.stdout)["tasks"]] == [task.id]
    claimed = ergon(["tasks", "claim", task.id, "--token", staff["ann"], "--json"], env)
    assert claimed.returncode == 0, claimed.stderr
    assert task_store.get_task(task.id).claimed_by == "ann"
    assert staff["ann"] not in claimed.stdout + claimed.stderr, "a token is echoed only when it is created"
    # a token and an --as naming someone else is a usage mistake
    mixed = ergon(["tasks", "list", "--as", "bob", "--token", staff["ann"]], env)
    assert mixed.returncode == 2 and "the token given is ann's" in mixed.stderr


def test_a_revoked_or_expired_token_is_refused(env, task, staff):
    from flows.store.db import session
    from flows.store.models import ApiToken

    created = ergon(["tokens", "create", "--name", "laptop", "--as", "ann", "--password-stdin", "--json"], env,
                    stdin="ann-pw\n")
    assert created.returncode == 0, created.stderr
    made = json.loads(created.stdout)
    assert made["user"] == "ann" and made["label"] == "laptop" and made["expires_at"]
    ok = ergon(["tasks", "list", "--json"], {**env, "ERGON_TOKEN": made["token"]})
    assert ok.returncode == 0 and json.loads(ok.stdout)["user"] == "ann"
    # bob cannot revoke ann's token; ann can
    assert ergon(["tokens", "revoke", made["id"], "--token", staff["bob"]], env).returncode == 1
    revoked = ergon(["tokens", "revoke", made["id"]], {**env, "ERGON_TOKEN": made["token"]})
    assert revoked.returncode == 0, revoked.stderr
    refused = ergon(["tasks", "claim", task.id], {**env, "ERGON_TOKEN": made["token"]})
    assert refused.returncode == 1 and "was revoked" in refused.stderr
    # expired: a token past its date
    other = token_auth.create("ann", expires_days=1)
    with session(write=True) as s:
        row = s.get(ApiToken, other.row.id)
        row.expires_at = row.created_at - timedelta(minutes=1)
        s.add(row)
    expired = ergon(["tasks", "claim", task.id, "--token", other.token], env)
    assert expired.returncode == 1 and "expired" in expired.stderr
    assert ergon(["tasks", "claim", task.id, "--token", "ergon_not-a-token-of-this-store"], env).returncode == 1
    _unchanged(task)
    # a token cannot make tokens (a leaked one would outlive its revocation)
    minted = ergon(["tokens", "create"], {**env, "ERGON_TOKEN": staff["ann"]})
    assert minted.returncode == 1 and "a token cannot create tokens" in minted.stderr


def test_the_token_is_stored_hashed(env, store, staff):
    created = ergon(["tokens", "create", "--as", "ann", "--password-stdin"], env, stdin="ann-pw\n")
    assert created.returncode == 0, created.stderr
    token = created.stdout.strip()
    assert token.startswith("ergon_") and len(token) > 40 and token not in created.stderr
    listed = ergon(["tokens", "list", "--json"], {**env, "ERGON_TOKEN": token})
    assert listed.returncode == 0 and token not in listed.stdout
    from flows.store import db

    db.dispose_all()  # close the connections: the WAL is checkpointed into the file
    files = [p for p in Path(store.removeprefix("sqlite:///")).parent.glob("ergon.db*")]
    data = b"".join(p.read_bytes() for p in files)
    assert token.encode() not in data, "the token itself is nowhere in the store"
    assert hashlib.sha256(token.encode()).hexdigest().encode() in data, "its SHA-256 is"


def test_ergon_user_needs_an_admins_binding(env, task, staff):
    as_ann = {**env, "ERGON_USER": "ann"}
    refused = ergon(["tasks", "claim", task.id], as_ann)
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert f"no admin has allowed OS user {ME} to act as ann" in refused.stderr and f"users bind {ME} ann" in refused.stderr
    _unchanged(task)
    # only an admin binds
    assert ergon(["users", "bind", ME, "ann", "--token", staff["bob"]], env).returncode == 1
    assert people_store.binding_of(ME) is None
    bound = ergon(["users", "bind", ME, "ann", "--token", staff["boss"]], env)
    assert bound.returncode == 0, bound.stderr
    claimed = ergon(["tasks", "claim", task.id, "--json"], as_ann)
    assert claimed.returncode == 0, claimed.stderr
    assert task_store.get_task(task.id).claimed_by == "ann"
    # bound, the OS user is ann by default, and ERGON_USER may not name anyone else
    mine = ergon(["tasks", "list", "--json"], env)
    assert mine.returncode == 0 and json.loads(mine.stdout)["user"] == "ann"
    assert ergon(["tasks", "list"], {**env, "ERGON_USER": "bob"}).returncode == 1
    assert ergon(["users", "unbind", ME, "--token", staff["boss"]], env).returncode == 0
    assert ergon(["tasks", "list"], as_ann).returncode == 1


def test_a_non_admin_cannot_add_an_admin(env, staff):
    for who in ([], ["--token", staff["bob"]], ["--as", "ann"]):
        done = ergon(["users", "add", "mallory", "--admin", *who], env)
        assert done.returncode == 1, done.stdout + done.stderr
        assert "only an admin may" in done.stderr or "ann's credential" in done.stderr
    assert people_store.get_user("mallory") is None
    for change in (["users", "add", "bob", "--admin"], ["users", "add", "bob", "--group", "legal"]):
        assert ergon([*change, "--token", staff["bob"]], env).returncode == 1
    assert not people_store.get_user("bob").is_admin and people_store.groups_of("bob") == ["sales"]
    reset = ergon(["users", "add", "ann", "--password-stdin", "--token", staff["bob"]], env, stdin="mine-now\n")
    assert reset.returncode == 1 and people.authenticate("ann", "ann-pw") is not None, "nor set someone's password"
    made = ergon(["users", "add", "mallory", "--admin", "--token", staff["boss"]], env)
    assert made.returncode == 0, made.stderr
    assert people_store.get_user("mallory").is_admin


def test_the_first_admin_is_created_once(env, store):
    before = ergon(["users", "add", "eve", "--admin"], env)
    assert before.returncode == 1 and "create-admin" in before.stderr, "no admin: nobody may add users yet"
    assert people_store.get_user("eve") is None
    nameless = ergon(["users", "create-admin", "boss"], env)
    assert nameless.returncode == 2 and "nobody can act as" in nameless.stderr, "an admin without a password, not me"
    first = ergon(["users", "create-admin", "boss", "--password-stdin"], env, stdin="boss-pw\n")
    assert first.returncode == 0, first.stderr
    assert people_store.get_user("boss").is_admin and people.authenticate("boss", "boss-pw") is not None
    again = ergon(["users", "create-admin", "eve", "--password-stdin"], env, stdin="eve-pw\n")
    assert again.returncode == 1 and "exists already" in again.stderr
    assert people_store.get_user("eve") is None
    # the admin acts with a token made with their password
    token = ergon(["tokens", "create", "--as", "boss", "--password-stdin"], env, stdin="boss-pw\n").stdout.strip()
    assert ergon(["users", "add", "eve", "--group", "legal", "--token", token], env).returncode == 0
    assert people_store.groups_of("eve") == ["legal"]


def test_the_starter_of_a_run_is_who_acts(env, store, staff, definitions):
    """`ergon run` records the resolved identity as the starter (an --as without credential starts nothing)."""
    (definitions / "tiny.yaml").write_text(
        "format_version: 1\nprocess: tiny\ninitial: done\ncontext: {schema: {type: object}}\n"
        "nodes:\n  done: {type: final}\n")
    run_env = {**env, "ERGON_DEFINITIONS": str(definitions)}
    refused = ergon(["run", "tiny", "--as", "ann"], run_env)
    assert refused.returncode == 1 and "ann's credential" in refused.stderr
    unbound = ergon(["run", "tiny"], {**run_env, "ERGON_USER": "ann"})
    assert unbound.returncode == 1 and "no admin has allowed" in unbound.stderr
    assert run_store.list_runs(definition="tiny")[1] == 0, "nothing recorded"
