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
