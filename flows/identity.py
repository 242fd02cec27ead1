"""Who is acting: the one place that decides which Ergon user a command acts as, and what proves it.

Every command that records a person (``ergon tasks list|show|claim|answer``, ``ergon runs
cancel``, ``ergon publish``, ``ergon run``'s ``started_by``, ``ergon tokens``, ``ergon users``)
resolves its actor with :func:`resolve`, in this order:

1. **A personal token** — ``--token TOKEN``, else ``ERGON_TOKEN`` (:mod:`flows.tokens`; created
   with ``ergon tokens create``). The token's owner acts; ``--as`` naming someone else is a usage
   error. An unknown, expired or revoked token is refused — never silently ignored.
2. **``--as NAME`` with NAME's password** — from ``--password-stdin`` (the first line of standard
   input), else an interactive prompt when standard input is a terminal. ``--as`` naming the
   user one acts as anyway (step 4) needs no password.
3. **``ERGON_USER``** — accepted without a credential only when an admin bound this OS user to
   that Ergon user (``ergon users bind OS_USER NAME``); otherwise refused, naming the binding or
   the credential to give.
4. **The OS user itself** — acting as oneself: the Ergon user an admin bound this OS user to,
   else the Ergon user of the OS user's name (who may not exist in the store: then a person with
   no group and no admin right, who can act on unassigned tasks).

A refusal is an :class:`IdentityRefused`: one sentence naming the credential to give, with the
exit code (1, or 2 for a usage mistake); commands print it as their error line.

Admin rights (:func:`require_admin`): after the first admin exists, every change to people —
adding users, admin rights, passwords, OS-user bindings — needs the acting identity to be an
admin. The first admin is created once, explicitly (:func:`create_first_admin`, ``ergon users
create-admin``), only while the store has no admin at all.

Why this shape: the OS already authenticated the person at the terminal, so acting as oneself
costs nothing; acting as anyone else costs that person's credential, so a shared host's users
cannot answer for each other. What it is not: a boundary against someone who can write the store
itself (the SQLite file, the PostgreSQL credentials) — they can change any row; the state folder
is created owner-only for that reason.

Detached children (:func:`flows.runs.detached.spawn_ergon`) resolve nothing: they execute the
run recorded for them (``--run-id``), whose ``started_by`` the parent resolved, and their
environment carries no ``ERGON_USER`` or ``ERGON_TOKEN``.
"""

from __future__ import annotations

import getpass
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import IO, Literal

from flows import people
from flows import tokens as token_auth
from flows.errors import IdentityError
from flows.store import people as people_store

__all__ = ["ENV_TOKEN", "ENV_USER", "Identity", "IdentityRefused", "Proof", "by_token", "create_first_admin",
           "is_admin", "os_user", "own_name", "require_admin", "resolve"]

ENV_TOKEN = "ERGON_TOKEN"
ENV_USER = "ERGON_USER"

#: What proved an identity: a personal token, the user's password, the OS user's own name, or an
#: admin's binding of the OS user.
Proof = Literal["token", "password", "os-user", "binding"]


@dataclass(frozen=True)
class Identity:
    """The Ergon user a command acts as (``name``), what proved it, and the OS user behind it."""

    name: str
    proof: Proof
    os_user: str
    token_id: str | None = None


class IdentityRefused(IdentityError):
    """Who acts is not proven, or lacks a right; ``code`` is the exit code (1, or 2: usage)."""

    def __init__(self, message: str, *, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


def os_user() -> str:
    """The OS user running this process."""
    return getpass.getuser()


def own_name(os_name: str | None = None) -> str:
    """Who the OS user acts as without a credential: the Ergon user an admin bound it to, else
    the Ergon user of its own name."""
    name = os_name or os_user()
    binding = people_store.binding_of(name)
    return binding.user_name if binding is not None else name


def _how_to_prove(name: str) -> str:
    return (f"give {name}'s password (--password-stdin, or at the prompt on a terminal) or {name}'s personal token "
            f"(--token or {ENV_TOKEN}; {name} creates one with `ergon tokens create`)")


def by_token(token: str, *, source: str = "--token") -> Identity:
    """The identity a personal token proves; :class:`IdentityRefused` saying why not."""
    try:
        row = token_auth.verify(token)
    except token_auth.TokenRefused as exc:
        raise IdentityRefused(f"{source}: {exc}") from None
    return Identity(row.user_name, "token", os_user(), token_id=row.id)


def _password(name: str, password_stdin: bool, stdin: IO[str], prompt: Callable[[str], str]) -> str | None:
    if password_stdin:
        password = stdin.readline().rstrip("\r\n")
        if not password:
            raise IdentityRefused("--password-stdin: no password on standard input", code=2)
        return password
    if stdin.isatty():
        return prompt(f"password for {name}: ")
    return None


def resolve(as_user: str | None = None, *, token: str | None = None, password_stdin: bool = False,
            stdin: IO[str] | None = None, environ: Mapping[str, str] | None = None,
            prompt: Callable[[str], str] = getpass.getpass) -> Identity:
    """Who acts, in the order of the module docstring; raises :class:`IdentityRefused`.

    ``as_user``, ``token`` and ``password_stdin`` are the command's ``--as``, ``--token`` and
    ``--password-stdin``; ``stdin``, ``environ`` and ``prompt`` are for tests."""
    env = os.environ if environ is None else environ
    stdin = sys.stdin if stdin is None else stdin
    target = (as_user or "").strip() or None
    me = os_user()
    if token is not None:
        if password_stdin:
            raise IdentityRefused("give one credential: --token or --password-stdin, not both", code=2)
        who = by_token(token)
        if target is not None and target != who.name:
            raise IdentityRefused(f"--as {target}, but the token given is {who.name}'s", code=2)
        return who
    env_token = (env.get(ENV_TOKEN) or "").strip() or None
    env_user = (env.get(ENV_USER) or "").strip() or None
    own = own_name(me)
    if target is None and not password_stdin:
        if env_token:
            return by_token(env_token, source=ENV_TOKEN)
        if env_user is not None and env_user != own:
            raise IdentityRefused(
                f"{ENV_USER}={env_user}: no admin has allowed OS user {me} to act as {env_user} without a credential "
                f"(an admin can: `ergon users bind {me} {env_user}`); otherwise use --as {env_user} and "
                + _how_to_prove(env_user))
        return Identity(own, "binding" if own != me else "os-user", me)
    name = target or env_user or own  # --password-stdin alone proves ERGON_USER, or oneself
    if env_token:
        who = by_token(env_token, source=ENV_TOKEN)
        if who.name == name:
            return who
    if name == own and not password_stdin:  # acting as oneself needs no credential
        return Identity(own, "binding" if own != me else "os-user", me)
    password = _password(name, password_stdin, stdin, prompt)
    if password is None:
        raise IdentityRefused(f"acting as {name} needs {name}'s credential: " + _how_to_prove(name))
    if people.authenticate(name, password) is None:
        raise IdentityRefused(f"{name}'s password was not accepted (wrong, or {name} has no password: an admin sets "
                              f"one with `ergon users add {name} --password-stdin`)")
    return Identity(name, "password", me)


# --- admin rights --------------------------------------------------------------------------------


def is_admin(name: str) -> bool:
    user = people_store.get_user(name)
    return bool(user is not None and user.is_admin)


def require_admin(who: Identity, doing: str) -> None:
    """Refuse (:class:`IdentityRefused`) unless ``who`` is an admin; ``doing`` completes
    "only an admin may …"."""
    if is_admin(who.name):
        return
    if people_store.admin_count() == 0:
        raise IdentityRefused(f"only an admin may {doing}, and the store has none yet: create the first one with "
                              "`ergon users create-admin NAME`")
    raise IdentityRefused(f"only an admin may {doing}; {who.name} is not one (act as an admin: --as NAME with "
                          f"their password, or their token)")


def create_first_admin(name: str, password: str | None, *, who: Identity, display_name: str | None = None):
    """Create ``name`` as the store's first admin; refused once any admin exists. Without a
    password only for oneself (``name`` is who ``who`` is): an admin nobody can prove to be
    would lock every change to people."""
    name = name.strip()
    if not name or name.startswith("group:"):
        raise IdentityRefused(f"invalid user name {name!r}", code=2)
    if people_store.admin_count():
        raise IdentityRefused("the first admin exists already: admins are made by an admin "
                              "(`ergon users add NAME --admin`, acting as an admin)")
    if password is None and name != who.name:
        raise IdentityRefused(f"{name} would be an admin nobody can act as: give {name} a password "
                              f"(--password-stdin, or at the prompt), or create the admin under your own name "
                              f"({who.name})", code=2)
    try:
        return people_store.create_first_admin(
            name, password_hash=people.hash_password(password) if password is not None else None,
            display_name=display_name)
    except people_store.AdminExists as exc:
        raise IdentityRefused(f"{exc}: admins are made by an admin") from None
