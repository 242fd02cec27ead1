"""How every command talks to a person: progress and results on stdout, problems on stderr.

One pair of consoles and one way to say "that did not work", so that every command's error looks
the same (a red ``error:`` line, then an optional hint) and no user mistake prints a traceback:
commands turn an :class:`~flows.errors.ErgonError` into :func:`error` and an exit code.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any

from rich.console import Console
from rich.markup import escape

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)


def error(message: Any, *, hint: str | None = None, code: int = 2) -> int:
    """Print ``error: MESSAGE`` (and ``hint: …``) on stderr; return ``code`` for the command to exit with.

    The message is printed as text (brackets in it are not markup): it often quotes user input."""
    err.print(f"[red]error:[/] {escape(str(message))}")
    if hint:
        err.print(f"  hint: {escape(hint)}")
    return code


def diagnostics(found: Iterable[Any], *, code: int = 2) -> int:
    """Print compiler-style diagnostics (``file:line:col: error[code] …``) on stderr; return ``code``."""
    for d in found:
        print(d.format(), file=sys.stderr)
    return code



def table(headers: list[str], rows: list[list[str]], *, ids: tuple[str, ...], drop: tuple[str, ...],
          wide: bool = False) -> None:
    """Print a table whose ``ids`` columns are never cut: they are what the next command needs
    (``ergon runs show ID``). When the table is wider than the terminal (or than 80 columns,
    piped), the ``drop`` columns are left out, in that order, until it fits, and a line names
    them; what still does not fit wraps inside the other cells. ``wide`` shows every column,
    each at its full width, however long the lines get."""
    from rich.table import Column, Table

    natural = {name: max([len(name), *(len(row[i]) for row in rows)]) for i, name in enumerate(headers)}

    def needed(names: list[str]) -> int:  # the default box: a rule and a space either side of every cell
        return sum(natural[n] for n in names) + 3 * len(names) + 1

    shown = list(headers)
    hidden: list[str] = []
    if not wide:
        for name in drop:
            if needed(shown) <= out.width:
                break
            shown.remove(name)
            hidden.append(name)
    widths = {n: natural[n] for n in shown}
    if not wide and needed(shown) > out.width:
        # what is left after the ids is shared out, each other column wrapping in its share (water-filling)
        others = [n for n in shown if n not in ids]
        room = out.width - (3 * len(shown) + 1) - sum(natural[n] for n in shown if n in ids)
        for i, name in enumerate(sorted(others, key=lambda n: natural[n])):
            share = max(3, room // (len(others) - i))
            widths[name] = min(natural[name], share)
            room -= widths[name]
    built = Table(*(Column(n, width=widths[n], no_wrap=n in ids, overflow="fold") for n in shown))
    for row in rows:
        built.add_row(*(escape(row[headers.index(n)]) for n in shown))
    terminal = out.width
    out.width = max(terminal, needed(shown))  # wider than the terminal only when it must be: the lines then run on
    try:
        out.print(built, crop=False)
    finally:
        out.width = terminal
    if hidden:
        out.print(f"[dim]hidden: {', '.join(hidden)} (--wide shows them)[/]")
