"""The ranges of the CLI's numeric options, checked by cyclopts before a command runs.

A number outside its range is refused like any malformed option — one sentence naming the option
and its bound, exit status 2 — instead of reaching the store (SQLite holds 64-bit integers: a
larger ``--limit`` was an ``OverflowError``) or the calendar (``--expires-days 999999999`` is past
the year 9999). Each bound is wide enough for any real use.
"""

from __future__ import annotations

from cyclopts import validators

#: ``--limit`` of the list commands: how many rows to show.
MAX_LIMIT = 100_000
LIMIT = validators.Number(gte=1, lte=MAX_LIMIT)

#: ``--version``: a published version's number.
MAX_VERSION = 1_000_000_000
VERSION = validators.Number(gte=1, lte=MAX_VERSION)

#: ``tokens create --expires-days``: 0 (never) up to 100 years.
MAX_EXPIRES_DAYS = 36_500
EXPIRES_DAYS = validators.Number(gte=0, lte=MAX_EXPIRES_DAYS)

#: ``runs explain --guard``: the index of one of a node's exits.
GUARD = validators.Number(gte=0, lte=10_000)

#: ``ui --port``: a TCP port.
PORT = validators.Number(gte=1, lte=65_535)
#: ``server start --port``, ``serve --webhook-port``: a TCP port, or 0 for any free one.
ANY_PORT = validators.Number(gte=0, lte=65_535)
