"""A fan-out's items as a live bar while ``ergon run`` / ``ergon runs resume`` waits on a terminal.

The engine tells each ended item of a ``foreach`` or ``branch`` as a ``progress`` event (items
ended, failed, total). On a terminal, :class:`FanoutBars` draws one bar per fan-out running —
``classify ━━━━━━╸━━━ 412/10,000 · 3 failed · 0:00:41`` — and removes it when the node's own
line (✓ or ✗) is printed. Piped or redirected output gets none of it: a log file keeps the
node lines only, as before.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn


class FanoutBars:
    """The live bars of the fan-outs under way (nothing when ``console`` is no terminal)."""

    def __init__(self, console: Console) -> None:
        self._console = console
        self._live: Progress | None = None
        self._bars: dict[str, TaskID] = {}

    def update(self, node: str, detail: dict[str, Any]) -> None:
        """A ``progress`` event of fan-out ``node``."""
        if not self._console.is_terminal:
            return
        if self._live is None:
            self._live = Progress(
                TextColumn("  [cyan]{task.description}"), BarColumn(), MofNCompleteColumn(),
                TextColumn("{task.fields[failed]}"), TimeElapsedColumn(),
                console=self._console, transient=True,
            )
            self._live.start()
        failed = detail.get("failed") or 0
        note = f"[red]· {failed:,} failed[/]" if failed else ""
        bar = self._bars.get(node)
        if bar is None:
            self._bars[node] = self._live.add_task(node, total=detail["total"], completed=detail["done"], failed=note)
        else:
            self._live.update(bar, completed=detail["done"], failed=note)
        if detail["done"] >= detail["total"]:
            self._live.refresh()  # the last count is seen, not left to the next tick

    def end(self, node: str) -> None:
        """Fan-out ``node`` ended (or stopped): its bar goes; the display with the last one."""
        bar = self._bars.pop(node, None)
        if bar is None or self._live is None:
            return
        self._live.remove_task(bar)
        if not self._bars:
            self._live.stop()
            self._live = None
