"""`ergon users create-admin|add|bind|unbind|list`: the people of the store (users, groups,
admins, passwords, and which OS user acts as which Ergon user).

The first admin is made once, explicitly: ``ergon users create-admin NAME`` works only while the
store has no admin. From then on every change — adding a user or groups, admin rights, a
password, an OS-user binding — needs the acting identity (:mod:`flows.identity`: ``--as`` an
admin with their token or password, or being that admin's OS user) to be an admin; a refusal
says so and changes nothing. ``users list`` is open to everyone (names, groups and rights, never
a password or its hash).

Here ``--password-stdin`` is the password of the user being added or created (it was so before
the acting options existed); the acting admin proves themselves with ``--token``/``ERGON_TOKEN``,
by being the OS user, or at the password prompt on a terminal (:class:`flows.cli.acting.Acting`).
"""

from __future__ import annotations

import json
import sys
from typing import Annotated

from cyclopts import App, Parameter
from rich.console import Console
from rich.markup import escape

from flows.cli.acting import Acting, resolved
from flows.cli.output import error

users_app = App(name="users", help="Users, groups and admins (who may see and answer human tasks).")

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)


def _user_row(user, groups: list[str], os_users: list[str]) -> dict:
    return {"name": user.name, "display_name": user.display_name, "admin": user.is_admin, "groups": groups,
            "has_password": bool(user.password_hash), "os_users": os_users,
            "created_at": user.created_at.isoformat() if user.created_at else None}


def _admin(who: Acting, doing: str):
    """The acting admin's identity, or the exit code after the refusal."""
    from flows import identity

    me = resolved(who)
    if isinstance(me, int):
        return me
    try:
        identity.require_admin(me, doing)
    except identity.IdentityRefused as exc:
        return error(exc, code=exc.code)
    return me


def _stdin_password() -> str | None:
    password = sys.stdin.readline().rstrip("\r\n")
    return password or None


@users_app.command(name="create-admin")
def users_create_admin(
    name: str,
    *,
    password_stdin: Annotated[bool, Parameter(name="--password-stdin", negative=())] = False,
    display_name: Annotated[str | None, Parameter(name="--display-name")] = None,
    who: Acting = Acting(),
) -> int:
    """Create the store's first admin — only while it has no admin at all.

    Parameters
    ----------
    name
        The admin's user name (a new user, or an existing one made admin).
    password_stdin
        Read the admin's password from the first line of standard input (on a terminal you are
        asked for it; without one, only an admin under your own name can be created).
    display_name
        Name shown in the dashboard.
    """
    import getpass

    from flows import identity

    me = resolved(who)
    if isinstance(me, int):
        return me
    password = None
    if password_stdin:
        password = _stdin_password()
        if password is None:
            return error("no password on standard input")
    elif sys.stdin.isatty():
        password = getpass.getpass(f"password for {name} (empty: none): ") or None
        if password is not None and getpass.getpass("again: ") != password:
            return error("the two passwords differ", code=1)
    try:
        user = identity.create_first_admin(name, password, who=me, display_name=display_name)
    except identity.IdentityRefused as exc:
        return error(exc, code=exc.code)
    out.print(f"created the first admin [bold]{escape(user.name)}[/]" + (" (password set)" if password else ""))
    return 0


@users_app.command(name="add")
def users_add(
    name: str,
    *,
    group: Annotated[list[str] | None, Parameter(name=["--group", "-g"], negative=())] = None,
    admin: bool | None = None,
    display_name: Annotated[str | None, Parameter(name="--display-name")] = None,
    password_stdin: Annotated[bool, Parameter(name="--password-stdin", negative=())] = False,
    who: Acting = Acting(),
) -> int:
    """Create a user, or add groups / change rights or the password of an existing one (admins only).

    Parameters
    ----------
    name
        The user name (what --as, tokens and `assignee:` name).
    group
        Add the user to this group (repeatable); `group:legal` and `legal` are the same.
    admin
        Make the user an admin (--no-admin takes it away; unset leaves it as it is).
    display_name
        Name shown in the dashboard.
    password_stdin
        Read the user's password (dashboard sign-in, --as) from the first line of standard input.
    """
    from flows import people
    from flows.store import people as people_store

    me = _admin(who, "add or change users")
    if isinstance(me, int):
        return me
    password = None
    if password_stdin:
        password = _stdin_password()
        if password is None:
            return error("no password on standard input")
    if admin is False and name == me.name:
        return error("an admin cannot take their own admin right (another admin can)", code=1)
    existed = people_store.get_user(name) is not None
    try:
        user = people.add_user(name, group or (), admin, password, display_name=display_name)
    except ValueError as exc:
        return error(exc)
    groups = people_store.groups_of(user.name)
    out.print(f"{'updated' if existed else 'added'} user [bold]{escape(user.name)}[/]"
              + (" [yellow]admin[/]" if user.is_admin else "")
              + (f" groups: {escape(', '.join(groups))}" if groups else "")
              + (" (password set)" if password else ""))
    return 0


@users_app.command(name="bind")
def users_bind(os_user: str, name: str, *, who: Acting = Acting()) -> int:
    """Let an OS user act as an Ergon user without a credential (ERGON_USER, or by default; admins only).

    Parameters
    ----------
    os_user
        The OS account (as `whoami` prints it). One Ergon user per OS user: binding again replaces.
    name
        The Ergon user it acts as (must exist).
    """
    from flows.store import people as people_store
    from flows.store.errors import NotFound

    me = _admin(who, "bind OS users")
    if isinstance(me, int):
        return me
    try:
        people_store.bind_os_user(os_user.strip(), name, created_by=me.name)
    except NotFound:
        return error(f"no user {name} (add it first: ergon users add {name})")
    out.print(f"OS user [bold]{escape(os_user)}[/] acts as [bold]{escape(name)}[/] without a credential")
    return 0


@users_app.command(name="unbind")
def users_unbind(os_user: str, *, who: Acting = Acting()) -> int:
    """Remove an OS user's binding (admins only): it acts as the Ergon user of its own name again.

    Parameters
    ----------
    os_user
        The OS account.
    """
    from flows.store import people as people_store

    me = _admin(who, "unbind OS users")
    if isinstance(me, int):
        return me
    if not people_store.unbind_os_user(os_user.strip()):
        return error(f"OS user {os_user} has no binding", code=1)
    out.print(f"OS user [bold]{escape(os_user)}[/] is no longer bound")
    return 0


@users_app.command(name="list")
def users_list(*, json_: Annotated[bool, Parameter(name="--json")] = False) -> int:
    """List users with their groups, rights and the OS users bound to them.

    Parameters
    ----------
    json_
        Print JSON.
    """
    from rich.table import Table

    from flows.store import db
    from flows.store import people as people_store

    db.init_db()
    bound: dict[str, list[str]] = {}
    for b in people_store.list_bindings():
        bound.setdefault(b.user_name, []).append(b.os_user)
    rows = [_user_row(u, people_store.groups_of(u.name), bound.get(u.name, [])) for u in people_store.list_users()]
    if json_:
        print(json.dumps({"users": rows}))
        return 0
    table = Table("user", "admin", "groups", "password", "OS users", "display name")
    for r in rows:
        table.add_row(r["name"], "yes" if r["admin"] else "", ", ".join(r["groups"]),
                      "set" if r["has_password"] else "", ", ".join(r["os_users"]), r["display_name"] or "")
    out.print(table)
    out.print(f"[dim]{len(rows)} user(s)[/]")
    return 0
