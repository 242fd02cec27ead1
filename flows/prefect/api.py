"""Prefect's API for Ergon's calls from outside a flow run, through Prefect's own client.

An answer resumes the paused flow run that waits for it (:mod:`~flows.prefect.resume`); crash
detection ends the flow runs a dead process left open (:mod:`~flows.prefect.leftovers`); the
schedules list asks whether Prefect answers at all (:func:`reachable`). All of them go through
``get_client(sync_client=True)``, so everything comes from Prefect's settings — the environment,
``prefect.toml`` or the active profile alike — as it does for the flow run itself: the API's
address, its credentials (``PREFECT_API_KEY``, ``PREFECT_API_AUTH_STRING``), TLS
(``PREFECT_API_TLS_INSECURE_SKIP_VERIFY``, ``PREFECT_API_SSL_CERT_FILE``), extra headers
(``PREFECT_CLIENT_CUSTOM_HEADERS``), CSRF tokens (``PREFECT_CLIENT_CSRF_SUPPORT_ENABLED``), timeouts
and the retries on a busy server (``PREFECT_CLIENT_MAX_RETRIES``, ``PREFECT_CLIENT_RETRY_EXTRA_CODES``).
A server secured the way Prefect documents it therefore works for these calls too.

That costs a short-lived process such as ``ergon tasks answer`` the import of Prefect's client
(about 0.9 s on a 2-core machine). Reading Prefect's settings costs as much (it imports Prefect),
so there is no cheaper way to honour them; an earlier version spoke plain HTTP and saw only the
environment, which broke against profiles, CSRF protection and TLS settings.

What Prefect refuses, and a server that cannot be reached, become :class:`PrefectApiError`: one
line naming the API's address and what to check, which the CLI prints without a traceback.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import httpx

from flows.errors import ErgonError

if TYPE_CHECKING:
    from prefect.client.orchestration import SyncPrefectClient

#: How long :func:`reachable` waits for Prefect's health check.
HEALTH_TIMEOUT_SECONDS = 2.0


class PrefectApiError(ErgonError):
    """Prefect's API refused a call (credentials, CSRF, a proxy) or could not be reached."""


@contextmanager
def client() -> Iterator[SyncPrefectClient]:
    """Prefect's synchronous client, configured by Prefect's settings, for the API Ergon uses
    (:func:`flows.prefect.server.ensure_api_url` first: it may start Ergon's local server).
    HTTP errors and connection failures leave it as :class:`PrefectApiError`; Prefect's own
    exceptions (``ObjectNotFound`` for a 404) pass through for the caller to handle."""
    from flows.prefect.server import ensure_api_url

    ensure_api_url()
    from prefect.client.orchestration import get_client

    prefect_client = get_client(sync_client=True)
    try:
        with prefect_client:
            yield prefect_client
    except httpx.HTTPStatusError as exc:
        raise PrefectApiError(_refusal(exc, str(prefect_client.api_url).rstrip("/"))) from exc
    except httpx.TransportError as exc:
        raise PrefectApiError(f"cannot reach Prefect's API at {str(prefect_client.api_url).rstrip('/')}: "
                              f"{_one_line(str(exc)) or type(exc).__name__}") from exc


def reachable(timeout: float = HEALTH_TIMEOUT_SECONDS) -> bool:
    """Whether the API Prefect's settings name answers its health check now: one request within
    ``timeout``, without the client's retries (a server that is down must not stall a list for
    minutes; a refused connection still costs ~1.6 s of the transport's own connect retries), and
    without starting Ergon's local server. False when nothing configures an API — asked of
    :func:`flows.prefect.server.configured` first, which reads the same sources without importing
    Prefect (a command with no Prefect to ask does not pay the import)."""
    from flows.prefect.server import configured

    if configured() is None:
        return False
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL, PREFECT_CLIENT_MAX_RETRIES, temporary_settings

    if not PREFECT_API_URL.value():
        return False

    with temporary_settings(updates={PREFECT_CLIENT_MAX_RETRIES: 0}):
        try:
            with get_client(sync_client=True, httpx_settings={"timeout": timeout}) as prefect_client:
                prefect_client.request("GET", "/health")
        except (httpx.HTTPError, OSError):
            return False
    return True


def _refusal(exc: httpx.HTTPStatusError, api: str) -> str:
    """One line for a status Prefect's API answered with."""
    response = exc.response
    status = f"{response.status_code} {response.reason_phrase}".strip()
    if response.status_code == 401:
        return (f"Prefect's API at {api} refused the credentials ({status}): set PREFECT_API_AUTH_STRING "
                "(a Prefect server's basic auth) or PREFECT_API_KEY (Prefect Cloud) in the environment, "
                "prefect.toml or the active Prefect profile")
    detail = ""
    try:
        body = response.json()
        detail = str(body.get("detail") or body.get("exception_message") or "") if isinstance(body, dict) else ""
    except ValueError:
        detail = response.text[:200]
    line = f"Prefect's API at {api} answered {status} to {exc.request.method} {exc.request.url.path}"
    if detail:
        line += f": {_one_line(detail).rstrip('.')}"
    if "csrf" in detail.lower():
        line += "; Prefect's client sends CSRF tokens unless PREFECT_CLIENT_CSRF_SUPPORT_ENABLED is false"
    return line


def _one_line(text: str) -> str:
    return " ".join(text.split())
