"""Schedules in words: ``0 2 * * *`` is "every day at 02:00".

Covers the shapes schedules are mostly written in (every N minutes, hourly, daily, weekdays,
given weekdays, a day of the month); anything else is shown as the cron expression it is, so
nothing is ever described wrongly. Pure, tested without Streamlit.
"""

from __future__ import annotations

import re

_DAYS = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
_NUMBER = re.compile(r"^\d+$")


def _days(field: str) -> str | None:
    if field in ("1-5", "MON-FRI", "mon-fri"):
        return "on weekdays"
    if field in ("0,6", "6,0", "SAT,SUN", "sat,sun"):
        return "on weekends"
    parts = field.split(",")
    if all(_NUMBER.match(p) and int(p) <= 7 for p in parts):
        names = [_DAYS[int(p)] + "s" for p in parts]
        return "on " + (", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else names[0])
    return None


def _ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def describe_cron(expression: str) -> str:
    """A cron expression in words, or ``cron <expression>`` when its shape is not a common one."""
    fields = expression.split()
    if len(fields) != 5:
        return f"cron {expression}"
    minute, hour, dom, month, dow = fields
    if month != "*":
        return f"cron {expression}"
    if (minute, hour, dom, dow) == ("*", "*", "*", "*"):
        return "every minute"
    step = re.match(r"^\*/(\d+)$", minute)
    if step and (hour, dom, dow) == ("*", "*", "*"):
        return f"every {step.group(1)} minutes"
    if _NUMBER.match(minute) and (hour, dom, dow) == ("*", "*", "*"):
        return f"every hour at :{int(minute):02d}"
    hours = re.match(r"^\*/(\d+)$", hour)
    if _NUMBER.match(minute) and hours and (dom, dow) == ("*", "*"):
        return f"every {hours.group(1)} hours at :{int(minute):02d}"
    if not (_NUMBER.match(minute) and all(_NUMBER.match(h) for h in hour.split(","))):
        return f"cron {expression}"
    at = " and ".join(f"{int(h):02d}:{int(minute):02d}" for h in hour.split(","))
    if dom == "*" and dow == "*":
        return f"every day at {at}"
    if dom == "*" and (days := _days(dow)):
        return f"{days} at {at}"
    if _NUMBER.match(dom) and dow == "*":
        return f"on the {_ordinal(int(dom))} of every month at {at}"
    return f"cron {expression}"


def describe_schedule(text: str) -> str:
    """A trigger's schedule as :func:`flows.trigger_schedules.describe` writes it, with a cron
    expression put in words (``cron 0 2 * * * (Europe/Paris)`` → ``every day at 02:00 (Europe/Paris)``)."""
    match = re.match(r"^cron (\S+ \S+ \S+ \S+ \S+)( \(.+\))?$", text)
    if match:
        return describe_cron(match.group(1)) + (match.group(2) or "")
    every = re.match(r"^every (\d+(?:\.\d+)?)s$", text)
    if every:
        seconds = float(every.group(1))
        for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
            if seconds >= size and seconds % size == 0:
                n = int(seconds // size)
                return f"every {unit}" if n == 1 else f"every {n} {unit}s"
        return f"every {seconds:g} seconds"
    return text
