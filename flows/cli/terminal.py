"""How rich would print to a standard stream — when that is simple enough to do without rich.

The two commands that run most (`ergon --help`, `ergon check` in an editor or CI) print without
importing rich (0.02–0.03 s on this 2-core machine); they still print what rich would. This module
answers the two questions rich's ``Console`` settles first, the way rich 15 settles them: is the
stream a terminal that gets colour (the standard palette), and how wide is it. Where rich would
look further (``FORCE_COLOR``, ``TTY_COMPATIBLE``, ``TTY_INTERACTIVE``, ``NO_COLOR`` on a terminal,
a dumb terminal, Jupyter, Windows consoles) the answer is None and the caller uses rich itself.
"""

from __future__ import annotations

import os
import sys
from typing import TextIO

#: Variables with which rich decides colour or size in ways not reproduced here.
_RICH_DECIDES = ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "JUPYTER_COLUMNS", "JUPYTER_LINES")


def coloured(stream: TextIO) -> bool | None:
    """Whether rich would colour ``stream`` (a terminal) or print it plain (a pipe, a file);
    None when rich decides by something else."""
    env = os.environ
    if sys.platform == "win32" or any(env.get(name) is not None for name in _RICH_DECIDES):
        return None
    try:
        terminal = stream.isatty()
    except (AttributeError, ValueError):
        return None
    if terminal and (env.get("NO_COLOR", "") != "" or env.get("TERM", "").lower() in ("dumb", "unknown")):
        return None  # rich keeps bold without colour there, or prints for a dumb terminal
    return terminal


def width() -> int:
    """The width rich would lay text out in: ``COLUMNS``, else the first standard stream that is
    a terminal (input, output, error — rich's order), else 80."""
    columns = 0
    for fd in (0, 1, 2):
        try:
            columns = os.get_terminal_size(fd).columns
            break
        except (OSError, ValueError):
            continue
    given = os.environ.get("COLUMNS")
    if given is not None and given.isdigit():
        columns = int(given)
    return columns or 80


def paint(text: str, sgr: str, colour: bool) -> str:
    """``text`` in the SGR style ``sgr`` (``"32"`` green, ``"31"`` red) when ``colour``, as rich writes it."""
    return f"\x1b[{sgr}m{text}\x1b[0m" if colour else text
