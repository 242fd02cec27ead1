"""Users, groups, admins and password hashing (flows.people) and `ergon users`."""

from __future__ import annotations

import io
import json

import pytest

from flows import people
from flows.cli import run as cli
from flows.store import people as people_store


def test_hash_format_and_verify():
    encoded = people.hash_password("correct horse")
    scheme, n, r, p, salt, digest = encoded.split("$")
    assert (scheme, n, r, p) == ("scrypt", str(2**14), "8", "1")
    assert len(__import__("base64").b64decode(salt)) == 16
    assert people.verify_password("correct horse", encoded)
    assert not people.verify_password("correct horsE", encoded)
    assert not people.verify_password("", encoded)


def test_same_password_gets_different_salts():
    a, b = people.hash_password("pw"), people.hash_password("pw")
    assert a != b and a.split("$")[4] != b.split("$")[4]
    assert people.verify_password("pw", a) and people.verify_password("pw", b)
    fixed = bytes(16)
    assert people.hash_password("pw", salt=fixed) == people.hash_password("pw", salt=fixed)


@pytest.mark.parametrize("bad", [None, "", "plain", "scrypt$16384$8$1$!!$!!", "bcrypt$16384$8$1$AA==$AA==",
                                 "scrypt$3$8$1$AAAA$AAAA", "scrypt$1073741824$8$1$AAAA$AAAA"])
def test_malformed_hashes_never_match(bad):
    assert people.verify_password("pw", bad) is False


def test_empty_password_refused():
    with pytest.raises(people.PasswordError):
        people.hash_password("")


def test_add_user_and_authenticate(store):
    user = people.add_user("ann", ["legal", "group:ops"], password="s3cret")
    assert user.password_hash.startswith("scrypt$") and "s3cret" not in user.password_hash
    assert people_store.groups_of("ann") == ["legal", "ops"]
    assert people.authenticate("ann", "s3cret").name == "ann"
    assert people.authenticate("ann", "wrong") is None
    assert people.authenticate("nobody", "s3cret") is None
    people.add_user("bob")  # no password: cannot log in
    assert people.authenticate("bob", "") is None
    # adding again is additive and leaves admin/password alone unless given
    people.add_user("ann", ["finance"], admin=True)
    ann = people_store.get_user("ann")
    assert ann.is_admin and people.authenticate("ann", "s3cret") is not None
    assert people_store.groups_of("ann") == ["finance", "legal", "ops"]
    people.add_user("ann", admin=False)
    assert people_store.get_user("ann").is_admin is False
    with pytest.raises(ValueError):
        people.add_user("group:legal")


def test_cli_users_add_and_list(store, capsys, monkeypatch, tokens):
    admin = ["--token", tokens.admin]
    monkeypatch.setattr("sys.stdin", io.StringIO("hunter22\n"))
    assert cli(["users", "add", "ann", "--group", "legal", "--group", "ops", "--admin", "--password-stdin", *admin]) == 0
    assert "added user ann" in capsys.readouterr().out
    assert people.authenticate("ann", "hunter22") is not None
    assert cli(["users", "add", "bob", "-g", "sales", *admin]) == 0
    capsys.readouterr()
    assert cli(["users", "list", "--json"]) == 0
    users = {u["name"]: u for u in json.loads(capsys.readouterr().out)["users"]}
    assert users["ann"]["admin"] and users["ann"]["groups"] == ["legal", "ops"] and users["ann"]["has_password"]
    assert not users["bob"]["admin"] and users["bob"]["groups"] == ["sales"] and not users["bob"]["has_password"]
    assert "hunter22" not in json.dumps(users) and "scrypt" not in json.dumps(users)
    assert cli(["users", "list"]) == 0
    assert "ann" in capsys.readouterr().out
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    assert cli(["users", "add", "carl", "--password-stdin", *admin]) == 2
    assert people_store.get_user("carl") is None
