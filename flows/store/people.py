"""Users, groups and memberships (who may see and answer which human tasks).

Passwords arrive hashed: hashing and checking them is :mod:`flows.people`'s job. Groups exist
as long as someone was added to them; a membership is a (user, group) row.
"""

from __future__ import annotations

from sqlmodel import col, select

from flows.store._common import get_row, require_row
from flows.store.db import session
from flows.store.models import Group, Membership, User


def upsert_user(
    name: str, *, display_name: str | None = None, password_hash: str | None = None, is_admin: bool | None = None
) -> User:
    """Create a user or update the given attributes (None leaves an attribute as it is)."""
    with session(write=True) as s:
        user = s.get(User, name, with_for_update=True) or User(name=name)
        if display_name is not None:
            user.display_name = display_name
        if password_hash is not None:
            user.password_hash = password_hash
        if is_admin is not None:
            user.is_admin = is_admin
        s.add(user)
    return user


def get_user(name: str) -> User | None:
    return get_row(User, name)


def list_users() -> list[User]:
    with session() as s:
        return list(s.exec(select(User).order_by(col(User.name))).all())


def add_to_group(user: str, group: str) -> None:
    """Make ``user`` (who must exist) a member of ``group`` (created when new)."""
    with session(write=True) as s:
        require_row(s, User, user)
        if s.get(Group, group) is None:
            s.add(Group(name=group))
        if s.get(Membership, (user, group)) is None:
            s.add(Membership(user_name=user, group_name=group))


def remove_from_group(user: str, group: str) -> None:
    with session(write=True) as s:
        row = s.get(Membership, (user, group))
        if row is not None:
            s.delete(row)


def groups_of(user: str) -> list[str]:
    with session() as s:
        q = select(Membership.group_name).where(Membership.user_name == user).order_by(col(Membership.group_name))
        return list(s.exec(q).all())


def members_of(group: str) -> list[str]:
    with session() as s:
        q = select(Membership.user_name).where(Membership.group_name == group).order_by(col(Membership.user_name))
        return list(s.exec(q).all())
