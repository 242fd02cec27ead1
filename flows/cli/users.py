"""`ergon users add|list`: the people of the store (users, groups, admins, dashboard passwords).

These commands write the store directly, like every other command: whoever can run them can
already open the database, so they are an operator's tool and check no permission themselves.
"""

from __future__ import annotations

import json
import sys
from typing import Annotated

from cyclopts import App, Parameter
from rich.console import Console

from flows.cli import app
from flows.cli.output import error

users_app = App(name="users", help="Users, groups and admins (who may see and answer human tasks).")
app.command(users_app)

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)


def _user_row(user, groups: list[str]) -> dict:
    return {"name": user.name, "display_name": user.display_name, "admin": user.is_admin, "groups": groups,
            "has_password": bool(user.password_hash),
            "created_at": user.created_at.isoformat() if user.created_at else None}


@users_app.command(name="add")
def users_add(
    name: str,
    *,
    group: Annotated[list[str] | None, Parameter(name=["--group", "-g"], negative=())] = None,
    admin: bool | None = None,
    display_name: Annotated[str | None, Parameter(name="--display-name")] = None,
    password_stdin: Annotated[bool, Parameter(name="--password-stdin", negative=())] = False,
) -> int:
    """Create a user, or add groups / change rights of an existing one.

    Parameters
    ----------
    name
        The user name (what --as and ERGON_USER use, and `assignee:` names).
    group
        Add the user to this group (repeatable); `group:legal` and `legal` are the same.
    admin
        Make the user an admin (--no-admin takes it away; unset leaves it as it is).
    display_name
        Name shown in the dashboard.
    password_stdin
        Read the dashboard password from the first line of standard input.
    """
    from flows import people
    from flows.store import db
    from flows.store import people as people_store

    password = None
    if password_stdin:
        password = sys.stdin.readline().rstrip("\r\n")
        if not password:
            return error("no password on standard input")
    db.init_db()
    existed = people_store.get_user(name) is not None
    try:
        user = people.add_user(name, group or (), admin, password, display_name=display_name)
    except ValueError as exc:
        return error(exc)
    groups = people_store.groups_of(user.name)
    out.print(f"{'updated' if existed else 'added'} user [bold]{user.name}[/]"
              + (" [yellow]admin[/]" if user.is_admin else "")
              + (f" groups: {', '.join(groups)}" if groups else "")
              + (" (password set)" if password else ""))
    return 0


@users_app.command(name="list")
def users_list(*, json_: Annotated[bool, Parameter(name="--json")] = False) -> int:
    """List users with their groups and rights.

    Parameters
    ----------
    json_
        Print JSON.
    """
    from rich.table import Table

    from flows.store import db
    from flows.store import people as people_store

    db.init_db()
    rows = [_user_row(u, people_store.groups_of(u.name)) for u in people_store.list_users()]
    if json_:
        print(json.dumps({"users": rows}))
        return 0
    table = Table("user", "admin", "groups", "password", "display name")
    for r in rows:
        table.add_row(r["name"], "yes" if r["admin"] else "", ", ".join(r["groups"]),
                      "set" if r["has_password"] else "", r["display_name"] or "")
    out.print(table)
    out.print(f"[dim]{len(rows)} user(s)[/]")
    return 0
