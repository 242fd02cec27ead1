"""Users, groups and memberships (who may see and answer which human tasks), the first admin,
and the OS-user bindings admins allow (:mod:`flows.identity`).

Passwords arrive hashed: hashing and checking them is :mod:`flows.people`'s job. Groups exist
as long as someone was added to them; a membership is a (user, group) row.
"""

from __future__ import annotations

from sqlmodel import col, func, select

from flows.store._common import get_row, require_row
from flows.store.db import session
from flows.store.errors import StoreError
from flows.store.models import Group, Membership, OsBinding, User


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


class AdminExists(StoreError):
    """The store has an admin already: the first admin is created once."""


def admin_count() -> int:
    with session() as s:
        return int(s.exec(select(func.count()).select_from(User).where(col(User.is_admin).is_(True))).one())


def create_first_admin(name: str, *, password_hash: str | None, display_name: str | None = None) -> User:
    """Create (or promote) ``name`` as the store's first admin — in one write transaction that
    first checks that there is no admin, so two concurrent calls cannot both succeed."""
    with session(write=True) as s:
        if s.get_bind().dialect.name == "postgresql":
            # FOR UPDATE on no rows locks nothing: lock out other writers of users until commit
            s.connection().exec_driver_sql("LOCK TABLE users IN SHARE ROW EXCLUSIVE MODE")
        admins = s.exec(select(User.name).where(col(User.is_admin).is_(True))).all()
        if admins:
            raise AdminExists(f"the store has an admin already ({', '.join(sorted(admins))})")
        user = s.get(User, name, with_for_update=True) or User(name=name)
        user.is_admin = True
        if password_hash is not None:
            user.password_hash = password_hash
        if display_name is not None:
            user.display_name = display_name
        s.add(user)
    return user


def bind_os_user(os_user: str, user_name: str, *, created_by: str | None) -> OsBinding:
    """Let ``os_user`` act as ``user_name`` (who must exist) without a credential; replaces an
    earlier binding of that OS user."""
    with session(write=True) as s:
        require_row(s, User, user_name)
        row = s.get(OsBinding, os_user, with_for_update=True)
        if row is None:
            row = OsBinding(os_user=os_user, user_name=user_name, created_by=created_by)
        else:
            row.user_name, row.created_by = user_name, created_by
        s.add(row)
    return row


def unbind_os_user(os_user: str) -> bool:
    with session(write=True) as s:
        row = s.get(OsBinding, os_user)
        if row is None:
            return False
        s.delete(row)
    return True


def binding_of(os_user: str) -> OsBinding | None:
    return get_row(OsBinding, os_user)


def list_bindings() -> list[OsBinding]:
    with session() as s:
        return list(s.exec(select(OsBinding).order_by(col(OsBinding.os_user))).all())
