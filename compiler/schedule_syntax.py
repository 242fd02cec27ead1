"""The syntax of trigger schedules: 5-field cron expressions, intervals, IANA time zones.

Pure functions (no Prefect): the `triggers` check pass reports a bad schedule with its place in
the file before anything is deployed, and the runtime turns ``every`` into seconds with the same
rules. Cron is the classic 5-field form Prefect's scheduler accepts — minute, hour, day of month,
month, day of week; each field a comma list of ``*``, ``N``, ``A-B``, each optionally ``/STEP``;
month and weekday names (``jan``, ``mon``); weekday 7 is Sunday — plus the ``@hourly``-style
macros.
"""

from __future__ import annotations

import re
from functools import lru_cache

#: (name, lowest, highest, names) per cron field, in order.
_FIELDS: tuple[tuple[str, int, int, tuple[str, ...]], ...] = (
    ("minute", 0, 59, ()),
    ("hour", 0, 23, ()),
    ("day of month", 1, 31, ()),
    ("month", 1, 12, ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")),
    ("day of week", 0, 7, ("sun", "mon", "tue", "wed", "thu", "fri", "sat")),
)
MACROS = frozenset({"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"})
_ITEM = re.compile(r"^(?P<range>\*|[a-z0-9]+(?:-[a-z0-9]+)?)(?:/(?P<step>\d+))?$")
_EVERY = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h|d)?\s*$")
_UNITS = {None: 1.0, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def cron_error(expression: str) -> str | None:
    """Why ``expression`` is not a valid 5-field cron expression, or None when it is."""
    text = expression.strip().lower()
    if text.startswith("@"):
        return None if text in MACROS else f"unknown macro `{expression}` (known: {', '.join(sorted(MACROS))})"
    parts = text.split()
    if len(parts) != 5:
        return f"a cron expression has 5 fields (minute hour day-of-month month day-of-week), this one has {len(parts)}"
    for part, (name, low, high, names) in zip(parts, _FIELDS, strict=True):
        for item in part.split(","):
            problem = _item_error(item, low, high, names)
            if problem:
                return f"{name} field `{part}`: {problem}"
    return None


def _item_error(item: str, low: int, high: int, names: tuple[str, ...]) -> str | None:
    match = _ITEM.match(item)
    if not match:
        return f"`{item}` is not `*`, a number, a range `A-B` or one of those with `/STEP`"
    step = match.group("step")
    if step is not None and len(step) > 6:  # no cron field counts that far (and int() refuses 4,300+ digits)
        return f"the step `{step[:12]}…` is larger than any field's range"
    if step is not None and int(step) == 0:
        return "a step of 0 never advances"
    if match.group("range") == "*":
        return None
    bounds = []
    for token in match.group("range").split("-"):
        if token.isdigit() and len(token) > 6:
            return f"`{token[:12]}…` is outside {low}-{high}"
        if token.isdigit():
            value = int(token)
        elif token in names:
            value = names.index(token) + low
        else:
            return f"`{token}` is not a number" + (f" or a name ({', '.join(names)})" if names else "")
        if not low <= value <= high:
            return f"{value} is outside {low}-{high}"
        bounds.append(value)
    if len(bounds) == 2 and bounds[0] > bounds[1]:
        return f"the range `{item}` runs backwards"
    return None


def interval_seconds(every: float | int | str) -> float:
    """``every`` of an interval trigger in seconds (``90``, ``"30s"``, ``"5m"``, ``"1h"``, ``"1d"``).

    Raises :class:`ValueError` saying what is accepted.
    """
    if isinstance(every, bool):
        raise ValueError("an interval is a number of seconds or `30s`, `5m`, `1h`, `1d`, not a boolean")
    if isinstance(every, (int, float)):
        seconds = float(every)
    else:
        match = _EVERY.match(str(every))
        if not match:
            raise ValueError(f"`{every}` is not a number of seconds or `30s`, `5m`, `1h`, `1d`")
        seconds = float(match.group(1)) * _UNITS[match.group(2)]
    if seconds <= 0:
        raise ValueError(f"an interval must be longer than 0 seconds, got {every!r}")
    return seconds


def timezone_error(name: str) -> str | None:
    """Why ``name`` is not an IANA time zone this machine knows, or None."""
    if name in _zones():
        return None
    return f"`{name}` is not an IANA time zone (e.g. `UTC`, `Europe/Paris`, `America/New_York`)"


@lru_cache(maxsize=1)
def _zones() -> frozenset[str]:
    import zoneinfo

    return frozenset(zoneinfo.available_timezones()) | {"UTC"}
