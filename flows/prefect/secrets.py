"""Prefect Secret blocks and Variables as secret references: ``prefect-secret:NAME``, ``prefect-var:NAME``.

Where Prefect users keep their credentials, an environment's ``api_key`` or a tool server's
header can point: ``prefect-secret:openai-key`` reads the Secret block ``openai-key``,
``prefect-var:crm_token`` the Variable ``crm_token``. :func:`register` (called when
:mod:`flows.prefect` is imported) hands the two lookups to the port :mod:`flows.secret_resolvers`;
:func:`flows.secrets.resolve_reference` calls them at the moment a value is used, in the process
that runs the node, and remembers what they return for redaction as it does for Ergon's own
secrets. Nothing is cached: a changed block or variable is used from the next call on.

Values:

* a Secret block's stored value is used as stored: a string as it is — not through
  ``Secret.get()``, which would turn ``"12345"`` into the number 12345 and ``'"x"'`` into ``x`` —
  and a JSON value (a block saved with ``Secret(value={...})``) as its JSON text;
* a Variable holds a JSON value (``prefect variable set NAME 12345`` stores the number 12345): a
  string is used as it is, a number, boolean, list or object as its JSON text (``12345``,
  ``true``, ``{"user": "a"}``), so the value reads as it was typed. A ``null`` or empty value
  is refused: a key or header that is empty is a mistake, not a value.

A block or variable that does not exist is :class:`~flows.secrets.ReferenceNotFound` naming it and
the command that creates it; an unreachable Prefect API or an unreadable block is
:class:`~flows.secrets.SecretError`. Messages never hold a value. The lookups are synchronous
(``_sync=True``): the callers are synchronous functions that may run on an event loop's thread,
where Prefect would otherwise hand back a coroutine.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["read_secret_block", "read_variable", "register"]


def _text(value: Any, what: str) -> str:
    """A stored value as the string a key or header takes (see the module docstring)."""
    from flows.secrets import SecretError

    if value is None:
        raise SecretError(f"{what} holds no value (null)")
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    if not text:
        raise SecretError(f"{what} is empty")
    return text


def _api_url() -> str:
    """The Prefect API this process uses: the one its settings name (a process running nodes has
    one), else the one :func:`~flows.prefect.server.ensure_api_url` points it at (a command run
    outside a run, such as ``ergon interactions run``)."""
    from prefect.settings import get_current_settings

    url = get_current_settings().api.url
    if url:
        return str(url)
    from flows.prefect.server import ensure_api_url

    return ensure_api_url()


def _unreachable(what: str, url: str, exc: Exception) -> Exception:
    import httpx

    from flows.secrets import SecretError

    # A transport or HTTP error's text names the address and the status; any other error's text
    # (a validation error quoting the block's data) could hold the value, so only its type is told.
    detail = f": {exc}" if isinstance(exc, (httpx.HTTPError, OSError)) else ""
    return SecretError(f"{what} could not be read from the Prefect API at {url} ({type(exc).__name__}{detail})")


def read_secret_block(name: str) -> str:
    """The value of the Prefect Secret block ``name``."""
    from prefect.blocks.system import Secret
    from prefect.exceptions import ObjectNotFound

    from flows.secrets import ReferenceNotFound

    what = f"Prefect Secret block `{name}` (`prefect-secret:{name}`)"
    url = _api_url()
    load: Any = Secret.load  # `_sync` is taken by Prefect's dispatch wrapper, not in the typed signature
    try:
        block: Secret[Any] = load(name, _sync=True)
    except ValueError as exc:
        if isinstance(exc.__cause__, ObjectNotFound):
            raise ReferenceNotFound(
                f"{what} does not exist; create it with `prefect block create secret` (name it `{name}`), "
                f"or in Python: `prefect.blocks.system.Secret(value=...).save(\"{name}\")`") from None
        raise _unreachable(what, url, exc) from None
    except Exception as exc:  # the API is down, refuses the client, times out
        raise _unreachable(what, url, exc) from None
    return _text(block.value.get_secret_value(), what)


def read_variable(name: str) -> str:
    """The value of the Prefect Variable ``name``."""
    from prefect.client.orchestration import get_client

    from flows.secrets import ReferenceNotFound

    what = f"Prefect Variable `{name}` (`prefect-var:{name}`)"
    url = _api_url()
    try:
        with get_client(sync_client=True) as client:
            variable = client.read_variable_by_name(name)
    except Exception as exc:  # the API is down, refuses the client, times out
        raise _unreachable(what, url, exc) from None
    if variable is None:
        raise ReferenceNotFound(f"{what} does not exist; create it with `prefect variable set {name} VALUE`")
    return _text(variable.value, what)


def register() -> None:
    """Make ``prefect-secret:`` and ``prefect-var:`` references resolve (idempotent; imports no Prefect)."""
    from flows import secret_resolvers

    secret_resolvers.register("prefect-secret", read_secret_block)
    secret_resolvers.register("prefect-var", read_variable)
