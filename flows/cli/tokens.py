"""`ergon tokens create|list|revoke`: personal API tokens (:mod:`flows.tokens`).

A token proves who you are without your password: to the CLI (``--token`` or, better, since a
command line shows in the process list, ``ERGON_TOKEN``) — never to Prefect's resume form,
which asks a one-time code instead (``ergon tasks code``). ``create`` prints it once — the token
alone on standard output, so that ``TOKEN=$(ergon tokens create)`` works, and what it is on
standard error — and the store keeps only its SHA-256. A token cannot create tokens: prove
yourself with your password or as your OS user. ``list`` and ``revoke`` act on your own tokens;
an admin may list (``--all``) and revoke anyone's.
"""

from __future__ import annotations

import json
from typing import Annotated

from cyclopts import App, Parameter
from rich.console import Console
from rich.markup import escape

from flows.cli import bounds
from flows.cli.acting import Who, resolved
from flows.cli.output import error

tokens_app = App(name="tokens", help="Personal API tokens: act as yourself without a password (--token, ERGON_TOKEN).")

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)


def _when(value) -> str | None:
    return value.isoformat(timespec="seconds") if value else None


def _day(text: str | None) -> str:
    return text[:16].replace("T", " ") if text else ""


def _row(t) -> dict:
    return {"id": t.id, "user": t.user_name, "label": t.label, "created_at": _when(t.created_at),
            "expires_at": _when(t.expires_at), "last_used_at": _when(t.last_used_at),
            "revoked_at": _when(t.revoked_at), "revoked_by": t.revoked_by}


@tokens_app.command(name="create")
def tokens_create(
    *,
    name: Annotated[str | None, Parameter(name="--name")] = None,
    expires_days: Annotated[int, Parameter(name="--expires-days", validator=bounds.EXPIRES_DAYS)] = 90,
    json_: Annotated[bool, Parameter(name="--json")] = False,
    who: Who = Who(),
) -> int:
    """Create a personal token for the user you act as; it is printed once and never again.

    Parameters
    ----------
    name
        A label, to tell your tokens apart in `ergon tokens list`.
    expires_days
        Days until the token expires (at most 36500, a hundred years); 0: never.
    json_
        Print JSON (with the token) instead.
    """
    from flows import tokens

    me = resolved(who)
    if isinstance(me, int):
        return me
    if me.proof == "token":
        return error("a token cannot create tokens: act as yourself with your password (--as NAME "
                     "--password-stdin) or as your OS user", code=1)
    try:
        created = tokens.create(me.name, label=name, expires_days=expires_days)
    except tokens.TokenRefused as exc:
        return error(exc, code=1)
    if json_:
        print(json.dumps({**_row(created.row), "token": created.token}))
        return 0
    expiry = f"expires {_when(created.row.expires_at)}" if created.row.expires_at else "never expires"
    err.print(f"token [bold]{created.row.id}[/] for [bold]{escape(me.name)}[/]"
              + (f" ({escape(name)})" if name else "") + f", {expiry}. It is shown only now: keep it "
              "like a password (ERGON_TOKEN, --token); Prefect's resume form takes the one-time code of "
              "`ergon tasks code TASK_ID` instead.")
    print(created.token)
    return 0


@tokens_app.command(name="list")
def tokens_list(
    *,
    all_: Annotated[bool, Parameter(name="--all", negative=())] = False,
    json_: Annotated[bool, Parameter(name="--json")] = False,
    who: Who = Who(),
) -> int:
    """List your tokens (never the tokens themselves: their ids, labels and dates).

    Parameters
    ----------
    all_
        Everyone's tokens (admins only).
    json_
        Print JSON.
    """
    from rich.table import Column, Table

    from flows import identity
    from flows.store import tokens as token_store

    me = resolved(who)
    if isinstance(me, int):
        return me
    if all_:
        try:
            identity.require_admin(me, "list everyone's tokens")
        except identity.IdentityRefused as exc:
            return error(exc, code=exc.code)
    rows = [_row(t) for t in token_store.list_tokens(None if all_ else me.name)]
    if json_:
        print(json.dumps({"user": me.name, "tokens": rows}))
        return 0
    # the id is what `revoke` needs: never wrapped; dates to the minute
    table = Table(Column("id", no_wrap=True), "user", "label", "created", "expires", "last used", "revoked")
    for r in rows:
        table.add_row(r["id"], r["user"], r["label"] or "", _day(r["created_at"]), _day(r["expires_at"]) or "never",
                      _day(r["last_used_at"]), _day(r["revoked_at"]))
    out.print(table)
    out.print(f"[dim]{len(rows)} token(s)[/]")
    return 0


@tokens_app.command(name="revoke")
def tokens_revoke(token_id: str, *, who: Who = Who()) -> int:
    """Revoke a token at once: yours, or anyone's for an admin.

    Parameters
    ----------
    token_id
        The token's id (`ergon tokens list`), not the token.
    """
    from flows import identity, tokens

    me = resolved(who)
    if isinstance(me, int):
        return me
    try:
        row = tokens.revoke(token_id, by=me.name, is_admin=identity.is_admin(me.name))
    except tokens.TokenRefused as exc:
        return error(exc, code=1)
    out.print(f"token {row.id} of {escape(row.user_name)} revoked")
    return 0
