"""The port for secret references whose values are kept outside Ergon: ``prefect-secret:NAME``
(a Prefect Secret block) and ``prefect-var:NAME`` (a Prefect Variable).

:func:`flows.secrets.resolve_reference` resolves ``secret:`` and ``env:`` itself and asks this
table for the other kinds; :mod:`flows.prefect.secrets` fills it (:func:`register`) when
:mod:`flows.prefect` is imported, which every process that runs nodes does. So neither
:mod:`flows.secrets` nor this module imports Prefect.

A module of its own, importing nothing, rather than part of :mod:`flows.secrets`: that package
loads the compiler and the crypto library, and registering must cost nothing to a process that
imports :mod:`flows.prefect` only to ask for its server's address.

A resolver is ``resolve(name) -> value``; it raises :class:`flows.secrets.ReferenceNotFound` when
there is no such value (naming it and the command that makes it) and
:class:`flows.secrets.SecretError` for anything else — never with a value in the message.
The caller remembers the value for redaction.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["EXTERNAL_KINDS", "register", "resolver"]

#: The reference kinds resolved through this port (see :mod:`compiler.secret_references`).
EXTERNAL_KINDS = ("prefect-secret", "prefect-var")

_resolvers: dict[str, Callable[[str], str]] = {}


def register(kind: str, resolve: Callable[[str], str]) -> None:
    """Resolve references ``kind:NAME`` with ``resolve(NAME)`` (replacing an earlier resolver)."""
    if kind not in EXTERNAL_KINDS:
        raise ValueError(f"`{kind}` is not a reference kind kept outside Ergon (those are {', '.join(EXTERNAL_KINDS)})")
    _resolvers[kind] = resolve


def resolver(kind: str) -> Callable[[str], str] | None:
    """The resolver registered for ``kind``, if any."""
    return _resolvers.get(kind)
