"""Prefect's REST API over plain HTTP, for short-lived processes that must not import Prefect.

Importing the ``prefect`` client costs a process about 1.5 s; ``ergon tasks answer`` and
``ergon runs list`` need two or three calls, so they make them with httpx here: the API's address
from :func:`flows.prefect.server.ensure_api_url`, the credentials Prefect's own client would send,
and the retries it makes on a busy server (see :data:`flows.prefect.config.PREFECT_DEFAULTS`).
"""

from __future__ import annotations

import base64
import os
import time
from typing import Any

import httpx

#: Like Prefect's client: retry these, this many times.
RETRY_CODES = (429, 502, 503, 504)
RETRIES = 10


def client() -> tuple[httpx.Client, str]:
    """An HTTP client with Prefect's credentials, and the API's base address (no trailing slash)."""
    from flows.prefect.server import ensure_api_url

    return httpx.Client(timeout=30, headers=_auth_headers()), ensure_api_url().rstrip("/")


def post(http: httpx.Client, url: str, body: dict[str, Any]) -> Any:
    """POST with the retries Prefect's client makes: a busy server (SQLite locked) answers 503."""
    for attempt in range(RETRIES + 1):
        try:
            response = http.post(url, json=body)
            if response.status_code not in RETRY_CODES:
                response.raise_for_status()
                return response.json()
        except httpx.TransportError:
            if attempt == RETRIES:
                raise
        if attempt < RETRIES:
            time.sleep(min(2.0, 0.2 * 2 ** attempt))
    response.raise_for_status()
    return response.json()


def _auth_headers() -> dict[str, str]:
    """The credentials Prefect's own client would send (Prefect Cloud key, or a server's basic auth)."""
    if key := os.environ.get("PREFECT_API_KEY"):
        return {"Authorization": f"Bearer {key}"}
    if auth := os.environ.get("PREFECT_API_AUTH_STRING"):
        return {"Authorization": "Basic " + base64.b64encode(auth.encode()).decode()}
    return {}
