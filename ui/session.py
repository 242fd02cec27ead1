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

``ERGON_UI_SESSION_HOURS`` sets how long a sign-in lasts: a number of hours above 0 and at most
8760 (one year); default 12. Any other value (not a number, ``inf``, ``nan``, 0, ``1e9``) stops
the dashboard from starting (:func:`setting_error`, checked by ``ergon ui`` and ``ui/server.py``)
rather than being replaced by the default in silence.

A cookie is whatever the browser, or anyone, sends: a token that is not exactly the shape above
(any character outside ASCII letters, digits, ``-`` and ``_``, a part too long) is no sign-in,
never an error.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import math
import os
import re
from datetime import UTC, datetime, timedelta

COOKIE = "ergon_session"
HOURS_ENV = "ERGON_UI_SESSION_HOURS"
DEFAULT_HOURS = 12.0
MAX_HOURS = 8760.0  # one year; far larger values (1e9 hours) overflow the date of expiry
KEY_NAME = "ui-session"
_VERSION = "v1"
#: a token as :func:`issue` writes it: version, sign-in id, expiry (Unix seconds), signature
#: (base64url of 32 bytes, unpadded). ASCII classes only: ``\d`` would take other scripts' digits.
_TOKEN = re.compile(r"v1\.([A-Za-z0-9]{1,64})\.([0-9]{1,12})\.([A-Za-z0-9_-]{43})")


class SettingError(ValueError):
    """A dashboard setting in the environment has a value the dashboard cannot use."""


def _hours() -> float:
    text = os.environ.get(HOURS_ENV, "").strip()
    if not text:
        return DEFAULT_HOURS
    try:
        hours = float(text)
    except ValueError:
        hours = math.nan
    if not (math.isfinite(hours) and 0 < hours <= MAX_HOURS):
        raise SettingError(f"{HOURS_ENV} must be a number of hours above 0 and at most {MAX_HOURS:g} (one year), "
                           f"not {text[:40]!r}")
    return hours


def setting_error() -> str | None:
    """What is wrong with the session setting, in one sentence, or None: checked when the
    dashboard starts, so that a sign-in never meets it."""
    try:
        _hours()
    except SettingError as e:
        return str(e)
    return None


def lifetime() -> timedelta:
    return timedelta(hours=_hours())


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
    match = _TOKEN.fullmatch(token) if isinstance(token, str) else None
    if match is None:  # compare_digest below takes ASCII text only: check the shape first
        return None
    sign_in, expiry, signature = match.groups()
    if not hmac.compare_digest(signature, _signature(f"{_VERSION}.{sign_in}.{expiry}", _key())):
        return None
    if int(expiry) <= (now or datetime.now(UTC)).timestamp():
        return None
    return sign_in


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
