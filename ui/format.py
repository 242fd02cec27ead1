"""Small text formats shared by the dashboard's pages: times, durations, money, status badges."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

#: Runs in these states still change: their pages refresh themselves.
ACTIVE_RUN = ("pending", "running", "paused", "cancelling")


def status(value: str | None) -> str:
    """A status as shown (plain words: emoji depend on the viewer's fonts)."""
    return (value or "").replace("_", " ")


def when(dt: datetime | None) -> str:
    """``2026-11-30 14:05:09`` in UTC (the store's time), or an empty string."""
    if dt is None:
        return ""
    if dt.tzinfo is not None:
        dt = dt.astimezone(UTC)
    return dt.strftime("%Y-%m-%d %H:%M:%S")


def _aware(dt: datetime) -> datetime:
    return dt if dt.tzinfo is not None else dt.replace(tzinfo=UTC)


def seconds_between(start: datetime | None, end: datetime | None, *, now: datetime | None = None) -> float | None:
    """Seconds from ``start`` to ``end`` (to ``now`` while it is still going); None before it starts."""
    if start is None:
        return None
    stop = end or now
    if stop is None:
        return None
    return max(0.0, (_aware(stop) - _aware(start)).total_seconds())


def duration(seconds: float | None) -> str:
    if seconds is None:
        return ""
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {secs} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min"


def money(value: float | None) -> str:
    return "" if not value else f"${value:.4f}"


def short(value: Any, limit: int = 80) -> str:
    text = "" if value is None else str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"
