"""`ergon secrets set|list|delete|rotate|generate-key`: Ergon's encrypted secrets.

A value is read from standard input only — never from the command line, where it would sit in
the shell history and in every process listing. Nothing here prints a value.

Limits: a value is at most 64 KiB (UTF-8; input is not read past that), a name at most 128
characters — a longer one is refused without being printed whole.
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


#: A secret's name is at most this long (:func:`flows.secrets.validate_name`).
MAX_NAME_CHARS = 128
#: How much of a refused name an error shows.
_SHOWN_CHARS = 40


def _fail(exc: BaseException) -> int:
    return error(exc)


def _name_refused(name: str) -> int | None:
    """The exit code after refusing ``name``, or None when it is a valid secret name. A name far
    too long is cut in the message: echoing thousands of characters back helps no one."""
    from flows import secrets

    if len(name) > MAX_NAME_CHARS:
        return error(f"a secret's name is at most {MAX_NAME_CHARS} characters; `{name[:_SHOWN_CHARS]}…` has "
                     f"{len(name)}")
    try:
        secrets.validate_name(name)
    except ValueError as exc:
        return _fail(exc)
    return None


def _read_value(name: str) -> str:
    """The value from standard input (a prompt on a terminal), read no further than the bound."""
    from flows.store.secrets import MAX_VALUE_BYTES

    if sys.stdin.isatty():
        import getpass

        return getpass.getpass(f"value of {name} (not echoed): ")
    # Piped: the whole input minus the final newline (`echo`, `printf`, a file all work). A
    # character is at least a byte: this many characters are enough to tell "too large".
    return sys.stdin.read(MAX_VALUE_BYTES + 3).removesuffix("\n").removesuffix("\r")


@secrets_app.command(name="set")
def secrets_set(name: str) -> int:
    """Store a secret; the value is read from standard input (one line, or everything piped).

    Parameters
    ----------
    name
        The secret's name, as definitions write it after `secret:`.
    """
    from flows import secrets
    from flows.files import DiskFull
    from flows.store.errors import StoreUnavailable
    from flows.store.secrets import MAX_VALUE_BYTES

    if (refused := _name_refused(name)) is not None:
        return refused
    value = _read_value(name)
    if not value:
        return error("no value on standard input (pipe it in: `printf %s \"$TOKEN\" | ergon secrets set NAME`)")
    if len(value.encode("utf-8")) > MAX_VALUE_BYTES:
        return error(f"the value of `{name}` is larger than {MAX_VALUE_BYTES // 1024} KiB ({MAX_VALUE_BYTES} bytes), "
                     f"the most a secret holds: secrets are keys, tokens and passwords; keep larger data in a file")
    try:
        info = secrets.set_secret(name, value)
    except (ValueError, secrets.SecretKeyError, secrets.SecretError) as exc:
        return _fail(exc)
    except (DiskFull, StoreUnavailable) as exc:  # the machine's fault, not the request's
        return error(exc, code=1)
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

    if len(name) > MAX_NAME_CHARS:  # no secret has such a name (and it is not echoed whole)
        return error(f"no secret named `{name[:_SHOWN_CHARS]}…` (a name is at most {MAX_NAME_CHARS} characters)",
                     code=1)
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
