"""`ergon secrets set|list|delete|rotate|generate-key`: Ergon's encrypted secrets.

A value is read from standard input only — never from the command line, where it would sit in
the shell history and in every process listing. Nothing here prints a value.
"""

from __future__ import annotations

import json
import sys
from typing import Annotated

from cyclopts import App, Parameter
from rich.console import Console

from flows.cli.output import error

secrets_app = App(name="secrets", help="Encrypted secrets (`secret:NAME` in definitions). Values come from stdin.")

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)


def _fail(exc: BaseException) -> int:
    return error(exc)


@secrets_app.command(name="set")
def secrets_set(name: str) -> int:
    """Store a secret; the value is read from standard input (one line, or everything piped).

    Parameters
    ----------
    name
        The secret's name, as definitions write it after `secret:`.
    """
    from flows import secrets

    try:
        secrets.validate_name(name)
    except ValueError as exc:
        return _fail(exc)
    if sys.stdin.isatty():
        import getpass

        value = getpass.getpass(f"value of {name} (not echoed): ")
    else:
        # Piped: the whole input minus the final newline (`echo`, `printf`, a file all work).
        value = sys.stdin.read().removesuffix("\n").removesuffix("\r")
    if not value:
        return error("no value on standard input (pipe it in: `printf %s \"$TOKEN\" | ergon secrets set NAME`)")
    try:
        info = secrets.set_secret(name, value)
    except (ValueError, secrets.SecretKeyError, secrets.SecretError) as exc:
        return _fail(exc)
    out.print(f"stored secret [bold]{info.name}[/] (key {info.key_id})")
    return 0


@secrets_app.command(name="list")
def secrets_list(*, json_: Annotated[bool, Parameter(name="--json")] = False) -> int:
    """List secrets: names, key ids and dates (never values).

    Parameters
    ----------
    json_
        Print JSON.
    """
    from rich.table import Table

    from flows import secrets

    rows = [{"name": s.name, "key_id": s.key_id, "created_at": s.created_at.isoformat(),
             "updated_at": s.updated_at.isoformat()} for s in secrets.list_secrets()]
    if json_:
        print(json.dumps({"secrets": rows}))
        return 0
    table = Table("secret", "key", "created", "updated")
    for r in rows:
        table.add_row(r["name"], r["key_id"], r["created_at"][:19], r["updated_at"][:19])
    out.print(table)
    out.print(f"[dim]{len(rows)} secret(s)[/]")
    return 0


@secrets_app.command(name="delete")
def secrets_delete(name: str) -> int:
    """Delete a secret.

    Parameters
    ----------
    name
        The secret's name.
    """
    from flows import secrets

    if not secrets.delete_secret(name):
        return error(f"no secret named `{name}` (see `ergon secrets list`)", code=1)
    out.print(f"deleted secret [bold]{name}[/]")
    return 0


@secrets_app.command(name="rotate")
def secrets_rotate(*, new_key: Annotated[bool, Parameter(name="--new-key", negative=())] = False) -> int:
    """Re-encrypt every secret under the active key (the first configured one).

    Put a new key first in ERGON_SECRET_KEYS or the key file (keeping the old ones after it),
    run this, then remove the old keys.

    Parameters
    ----------
    new_key
        First add a new random key at the top of the key file (the default `ERGON_HOME/secret.key`
        or ERGON_SECRET_KEY_FILE); it becomes the active key.
    """
    from flows import secrets

    try:
        active, names = secrets.rotate(new_key=new_key)
    except (secrets.SecretKeyError, secrets.SecretError) as exc:
        return _fail(exc)
    if names:
        out.print(f"re-encrypted {len(names)} secret(s) under key [bold]{active}[/]: {', '.join(names)}")
    else:
        out.print(f"every secret is already under the active key [bold]{active}[/]")
    return 0


@secrets_app.command(name="generate-key")
def secrets_generate_key(*, key_id: Annotated[str, Parameter(name="--id")] = "k1") -> int:
    """Print a new random key entry `ID:BASE64` for ERGON_SECRET_KEYS or a key file.

    Parameters
    ----------
    key_id
        The key's id.
    """
    from flows.secrets.keys import generate_key

    print(f"{key_id}:{generate_key()}")
    return 0
