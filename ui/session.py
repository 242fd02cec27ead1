"""Dashboard sign-ins that outlive a tab: a signed, expiring token in an HTTP-only cookie.

Signing in (``ui/web.py``, a form posted to the dashboard's server) records a sign-in row in
the store (:mod:`flows.store.sign_ins`) and gives the browser a cookie holding
``v1.<sign-in id>.<expiry>.<signature>`` — never the password, never anything a page script
can read (``HttpOnly``), sent back to this site only (``SameSite=Lax``). Every script run reads
it from the WebSocket request (``st.context.cookies``) and checks, in order: the HMAC-SHA256
signature (key ``ERGON_HOME/ui-session.key``, see :func:`flows.secrets.keys.signing_key`), the
expiry written into the token, and the store's row (not expired, not revoked). Signing out
revokes the row, so a copy of the cookie stops working too. Deleting the key file ends every
sign-in at once.

``ERGON_UI_SESSION_HOURS`` sets how long a sign-in lasts (default 12 hours).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
from datetime import UTC, datetime, timedelta

COOKIE = "ergon_session"
HOURS_ENV = "ERGON_UI_SESSION_HOURS"
DEFAULT_HOURS = 12.0
KEY_NAME = "ui-session"
_VERSION = "v1"


def lifetime() -> timedelta:
    try:
        hours = float(os.environ.get(HOURS_ENV, "") or DEFAULT_HOURS)
    except ValueError:
        hours = DEFAULT_HOURS
    return timedelta(hours=hours if hours > 0 else DEFAULT_HOURS)


def _key() -> bytes:
    from flows.secrets.keys import signing_key

    return signing_key(KEY_NAME)


def _signature(payload: str, key: bytes) -> str:
    mac = hmac.new(key, f"ergon-session.{payload}".encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(mac).decode("ascii").rstrip("=")


def issue(user_name: str, *, now: datetime | None = None) -> tuple[str, int]:
    """Sign ``user_name`` in: ``(token, seconds it lasts)``."""
    from flows.store import sign_ins

    now = now or datetime.now(UTC)
    expires = now + lifetime()
    row = sign_ins.create_sign_in(user_name, expires)
    payload = f"{_VERSION}.{row.id}.{int(expires.timestamp())}"
    return f"{payload}.{_signature(payload, _key())}", int((expires - now).total_seconds())


def _sign_in_id(token: str, *, now: datetime | None = None) -> str | None:
    """The sign-in a token names, when its signature is right and its expiry not passed."""
    parts = token.split(".") if token else []
    if len(parts) != 4 or parts[0] != _VERSION or not parts[2].isdigit():
        return None
    payload = ".".join(parts[:3])
    if not hmac.compare_digest(parts[3], _signature(payload, _key())):
        return None
    if int(parts[2]) <= (now or datetime.now(UTC)).timestamp():
        return None
    return parts[1]


def user_of(token: str | None, *, now: datetime | None = None) -> str | None:
    """Who a token signs in, or None (forged, expired, revoked, or no token)."""
    from flows.store import sign_ins

    sign_in = _sign_in_id(token or "", now=now)
    return sign_ins.active_user(sign_in, now=now) if sign_in else None


def revoke(token: str | None) -> None:
    """Sign out: the token's sign-in is revoked (a forged token revokes nothing)."""
    from flows.store import sign_ins

    sign_in = _sign_in_id(token or "")
    if sign_in:
        sign_ins.revoke_sign_in(sign_in)
