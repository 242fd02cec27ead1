"""Users, groups and memberships."""

from __future__ import annotations

import pytest

from flows.store import people as people_store
from flows.store.errors import NotFound


def test_users_and_groups(people):
    assert [u.name for u in people_store.list_users()] == ["ann", "bob", "root"]
    assert people_store.groups_of("ann") == ["legal"] and people_store.members_of("legal") == ["ann"]
    people_store.upsert_user("ann", display_name="Ann A.")
    assert people_store.get_user("ann").display_name == "Ann A." and people_store.get_user("ann").is_admin is False
    people_store.remove_from_group("ann", "legal")
    assert people_store.groups_of("ann") == []
    with pytest.raises(NotFound):
        people_store.add_to_group("nobody", "legal")
