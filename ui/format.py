"""Small text formats shared by the dashboard's pages: times, durations, money, status colours,
a run's duration without the time it lay failed before a resume, and what a kind of node does."""

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


def when_md(dt: datetime | None) -> str:
    """:func:`when` for text Streamlit renders as markdown (a caption, a link's label), its
    colons escaped: they still show as colons, but ``14:05:09`` no longer reads as the emoji
    shortcode ``:05:``, which makes the browser fetch Streamlit's emoji plugin (about 260 KB of
    JavaScript) before it draws the text — 0.3 s of the dashboard's first page in a cold browser
    on this 2-core machine (2026-12-07)."""
    return when(dt).replace(":", "\\:")


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


#: Status colours (text, background) for tables: the graph's palette.
STATUS_COLOURS = {
    "completed": ("#1b5e20", "#e8f5e9"), "failed": ("#b71c1c", "#ffebee"), "crashed": ("#4a148c", "#f3e5f5"),
    "running": ("#e65100", "#fff3e0"), "paused": ("#e65100", "#fff8e1"), "cancelling": ("#424242", "#eeeeee"),
    "cancelled": ("#424242", "#eeeeee"), "pending": ("#0d47a1", "#e3f2fd"), "in progress": ("#e65100", "#fff3e0"),
    "expired": ("#424242", "#eeeeee"),
}


def status_css(value: str) -> str:
    """CSS for a status cell (pandas Styler), or nothing for an unknown one."""
    colours = STATUS_COLOURS.get(value)
    return f"color: {colours[0]}; background-color: {colours[1]}; font-weight: 600" if colours else ""


_STOPPED = ("failed", "crashed", "cancelled")


def run_seconds(started: datetime | None, ended: datetime | None, spans: list[tuple[str, datetime, datetime | None]],
                *, now: datetime | None = None) -> float | None:
    """How long a run ran: start to end (to ``now`` while it goes on), less each stretch it lay
    stopped — from a failed visit's end to the next visit's start, the time before a resume."""
    total = seconds_between(started, ended, now=now)
    if total is None:
        return None
    for (status, _, stopped_at), (_, resumed_at, _) in zip(spans, spans[1:], strict=False):
        if status in _STOPPED and stopped_at is not None:
            total -= seconds_between(stopped_at, resumed_at) or 0.0
    return max(0.0, total)


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


def cost(value: float | None) -> str:
    """A run's cost as a table shows it: ``$0`` when nothing was spent, never blank."""
    return money(value) or "$0"


def short(value: Any, limit: int = 80) -> str:
    text = "" if value is None else str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def markdown_text(text: str) -> str:
    """``text`` shown through markdown as typed (``$900`` is not a formula, ``*`` not emphasis)."""
    return "".join("\\" + c if c in "\\`*_{}[]()#+-.!|<>~$" else c for c in text)


#: What each kind of node does, in a reader's words (the run page's inspector says it when the
#: definition describes a node no further).
NODE_KINDS = {
    "tool": "A step that runs a tool or sets fixed values.",
    "interaction": "A step that asks a language model once.",
    "agent": "A step where a language model works with tools until it has its answer.",
    "condition": "A choice of the next step, by the run's data.",
    "foreach": "A step done once for each item of a list.",
    "branch": "Steps run side by side, then joined.",
    "process": "Another process, run as a part of this one.",
    "human_task": "A question to a person: the run waits for the answer.",
    "final": "An end of the process: its name is the run's outcome.",
}


def node_kind(node_type: str) -> str:
    return NODE_KINDS.get(node_type, f"A {node_type.replace('_', ' ')} step.")


def assignee(value: str | None) -> str:
    """Who a task is for, in words: ``group:legal`` is the legal group; nobody named is anyone."""
    if not value:
        return "anyone"
    if value.startswith("group:"):
        return f"the {value.removeprefix('group:')} group"
    return value
