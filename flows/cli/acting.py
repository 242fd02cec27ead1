"""The options every command that acts for a person takes: ``--as``, ``--password-stdin``, ``--token``.

They are one flattened dataclass (:class:`Who`) so that each command declares them the same way
(``who: Who = Who()``), and :func:`acting` turns them into the :class:`flows.identity.Identity`
the command records, or an :class:`~flows.identity.IdentityRefused` the command prints as its
error line. The rules are :mod:`flows.identity`'s.

``ergon users`` commands take :class:`Acting` instead: their own ``--password-stdin`` is the
password of the user being added, so the acting admin proves themselves by token, by being the
OS user, or at the password prompt on a terminal.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from cyclopts import Group, Parameter

IDENTITY = Group("Acting as", sort_key=99)


@Parameter(name="*", group=IDENTITY)
@dataclass(frozen=True)
class Who:
    as_: Annotated[str | None, Parameter(
        name="--as", help="Act as this Ergon user: needs their password or token, unless it is who you are "
                          "anyway (your OS user, or the user an admin bound it to).")] = None
    password_stdin: Annotated[bool, Parameter(
        name="--password-stdin", negative=(), help="Read the --as user's password from the first line of "
                                                   "standard input (on a terminal you are asked for it).")] = False
    token: Annotated[str | None, Parameter(
        name="--token", help="Act with this personal token (see `ergon tokens`); ERGON_TOKEN does the same "
                             "without showing it in the process list.")] = None


@Parameter(name="*", group=IDENTITY)
@dataclass(frozen=True)
class Acting:
    as_: Annotated[str | None, Parameter(
        name="--as", help="Act as this Ergon user (an admin): needs their token, or their password at the prompt "
                          "on a terminal, unless it is who you are anyway.")] = None
    token: Annotated[str | None, Parameter(
        name="--token", help="Act with this personal token (see `ergon tokens`); ERGON_TOKEN does the same.")] = None


def acting(who: Who | Acting | None = None):
    """The identity the options prove (the store must be initialised); raises
    :class:`flows.identity.IdentityRefused`."""
    from flows import identity

    who = who or Who()
    return identity.resolve(who.as_, token=who.token, password_stdin=getattr(who, "password_stdin", False))


def resolved(who: Who | Acting | None = None):
    """:func:`acting` for a command: the identity, or the exit code after printing the refusal
    as the command's one error line. Initialises the store first."""
    from flows.cli.output import error
    from flows.identity import IdentityRefused
    from flows.store import db

    db.init_db()
    try:
        return acting(who)
    except IdentityRefused as exc:
        return error(exc, code=exc.code)
