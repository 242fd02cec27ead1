"""A fan-out's progress as its Prefect task run's progress artifact.

A ``foreach`` with ``task_runs: node`` is one Prefect task run whose items run inside it
(:mod:`flows.runtime.engine`); Prefect's UI would show nothing of them until the task run ends.
The engine tells each ended item as a ``progress`` event; while the event comes from inside a
task run (only such a fan-out's items do: a per-item fan-out's items end outside any one task
run), this module keeps a progress artifact on that task run — the percentage of items ended,
and a description with the counts (``412 of 10,000 items ended, 3 failed``).

The artifact is written from the event loop, never blocking the items: it is created at the
first event and updated at most once a second (:data:`EVERY_SECONDS`), always with the latest
counts, and once more at the end. :func:`settle` — awaited by the node's task run before it
returns (:mod:`flows.prefect.executor`) — waits for the last write, so the task run never ends
with its artifact behind. A write that fails is dropped: the counts are a view, Ergon's store
holds every item.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any
from uuid import UUID

from prefect.artifacts import acreate_progress_artifact, aupdate_progress_artifact
from prefect.context import TaskRunContext

#: At most one write per task run in this many seconds (and the last one always).
EVERY_SECONDS = 1.0


class _Bar:
    """One task run's progress artifact: the latest counts and the write under way."""

    __slots__ = ("artifact", "latest", "sent", "sent_at", "writing")

    def __init__(self) -> None:
        self.artifact: UUID | None = None
        self.latest: tuple[float, str] = (0.0, "")
        self.sent: tuple[float, str] | None = None
        self.sent_at = 0.0
        self.writing: asyncio.Task[None] | None = None

    async def write(self) -> None:
        """Write the latest counts (again while newer ones came in during a write)."""
        while self.sent != self.latest:
            latest = self.latest
            percent, description = latest
            try:
                if self.artifact is None:
                    self.artifact = await acreate_progress_artifact(percent, description=description)
                else:
                    await aupdate_progress_artifact(self.artifact, percent, description=description)
            except Exception:  # noqa: BLE001 - the artifact is a view; the store has the items
                return
            self.sent, self.sent_at = latest, time.monotonic()


_BARS: dict[Any, _Bar] = {}


def describe(node: str, detail: dict[str, Any]) -> tuple[float, str]:
    """The percentage and the description of a ``progress`` event's counts."""
    done, total, failed = detail["done"], detail["total"], detail.get("failed", 0)
    percent = 100.0 * done / total if total else 100.0
    text = f"`{node}`: {done:,} of {total:,} items ended"
    return percent, text + (f", {failed:,} failed" if failed else "")


def publish(node: str, detail: dict[str, Any]) -> None:
    """Take a ``progress`` event: schedule a write of the current task run's artifact when the
    last one is a second old (nothing outside a task run or an event loop)."""
    ctx = TaskRunContext.get()
    if ctx is None:
        return
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return
    bar = _BARS.setdefault(ctx.task_run.id, _Bar())
    bar.latest = describe(node, detail)
    if bar.writing is not None and not bar.writing.done():
        return  # the write under way picks up the latest counts when it ends
    if bar.artifact is not None and time.monotonic() - bar.sent_at < EVERY_SECONDS:
        return
    bar.writing = loop.create_task(bar.write())


async def settle(task_run_id: Any) -> None:
    """Write the last counts of ``task_run_id``'s artifact and forget it (a no-op when it has none)."""
    bar = _BARS.pop(task_run_id, None)
    if bar is None:
        return
    if bar.writing is not None:
        await bar.writing
    await bar.write()
