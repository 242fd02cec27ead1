"""How many wrong passwords the dashboard's sign-in takes before it stops listening for a while.

The policy, per user name (as typed, whether or not such a user exists) and per client address,
counted over the last :data:`MEMORY` in the store (:mod:`flows.store.sign_in_failures`), so
every dashboard process on one store counts the same attempts:

* after :data:`NAME_LIMIT` failures for a name, or :data:`ADDRESS_LIMIT` from one address, the
  next attempt waits :data:`FIRST_DELAY` after the latest failure; each failure beyond the limit
  doubles the wait, up to :data:`MAX_DELAY`. A person who mistyped five times waits a minute; a
  guesser gets about a dozen tries at a name in the first hour and about eight an hour after
  that, whatever addresses they use.
* a refused attempt is answered 429 with ``Retry-After`` and **its password is not checked**:
  a right password is refused too until the wait is over (the message says so), and a flood of
  guesses costs no scrypt work. Refused attempts are not counted, so waiting it out is enough.
* a successful sign-in forgets the failures of that name from that address (the person's own
  typos); failures of the name from elsewhere age out on their own.

The address is the one the dashboard's server (uvicorn) gives the request: the connecting peer,
or — when the peer is a trusted proxy (uvicorn's ``FORWARDED_ALLOW_IPS``, by default
``127.0.0.1,::1``) — the client named in its ``X-Forwarded-For``. So a reverse proxy on the same
machine passes the real client's address on; one elsewhere must be named in
``FORWARDED_ALLOW_IPS``, or every client shares the proxy's address (the per-address limit then
throttles everyone together; the per-name limit holds either way). Anyone who can connect from
a trusted address can claim any address, which escapes only the per-address limit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

NAME_LIMIT = 5
ADDRESS_LIMIT = 20
MEMORY = timedelta(hours=1)
FIRST_DELAY = timedelta(minutes=1)
MAX_DELAY = timedelta(minutes=15)
#: longer names and addresses are cut to this length before they are stored (the body limit of
#: ``ui/web.py`` already bounds them; this keeps rows small)
KEY_LENGTH = 200


@dataclass(frozen=True)
class Refusal:
    """An attempt refused before its password was checked, and for how long more."""

    message: str
    retry_after: int  # seconds


def _wait(count: int, limit: int, latest: datetime | None, now: datetime) -> float:
    """Seconds still to wait after ``count`` recent failures (0 when under the limit)."""
    if count < limit or latest is None:
        return 0.0
    delay = min(FIRST_DELAY * 2 ** min(count - limit, 16), MAX_DELAY)
    return max(0.0, (latest + delay - now).total_seconds())


def _minutes(seconds: int) -> str:
    n = max(1, math.ceil(seconds / 60))
    return f"{n} minute" + ("s" if n > 1 else "")


def admit(user_name: str, address: str, *, now: datetime | None = None) -> Refusal | None:
    """None when the attempt may go on to the password check (it is then counted as a failure
    until :func:`succeeded`); otherwise why not."""
    from flows.store import sign_in_failures

    now = now or datetime.now(UTC)

    def refuse(by_name: sign_in_failures.Recent, by_address: sign_in_failures.Recent) -> Refusal | None:
        name_wait = _wait(by_name.count, NAME_LIMIT, by_name.latest, now)
        address_wait = _wait(by_address.count, ADDRESS_LIMIT, by_address.latest, now)
        wait = math.ceil(max(name_wait, address_wait))
        if wait <= 0:
            return None
        which = "for this name" if name_wait >= address_wait else "from this address"
        return Refusal(f"Too many failed sign-ins {which}; try again in {_minutes(wait)} "
                       "(until then even the right password is refused).", wait)

    return sign_in_failures.admit(user_name[:KEY_LENGTH], address[:KEY_LENGTH], since=now - MEMORY,
                                  refuse=refuse, now=now)


def succeeded(user_name: str, address: str) -> None:
    from flows.store import sign_in_failures

    sign_in_failures.forget(user_name[:KEY_LENGTH], address[:KEY_LENGTH])
