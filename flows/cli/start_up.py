"""A command's heavy imports, with the garbage collector paused while they run.

Importing the compiler makes about 70,000 objects that live as long as the process
(modules, classes, the validators pydantic builds for every IR model) and almost no garbage.
CPython's collector does not know that: it ran 127 times during one `ergon check` of a single
definition, 41–65 ms of the command, each generation-1 and -2 pass walking the objects the
imports had just made — and once more over all of them when the interpreter exits.

:func:`heavy_imports` pauses the collector around a command's imports. In the `ergon` process
itself (:func:`flows.cli.main` sets :data:`FREEZE`) it then moves every object made so far into
the permanent generation (:func:`gc.freeze`), so no later collection — the command's own, nor the
one at exit — walks them again; `ergon check` of one definition went from 0.43 s to 0.31 s (median
of 21 alternating runs, ``benchmarks/startup.py --before``). Freezing is for a process that starts, does one command and
ends: in a longer-lived caller (tests drive commands through :func:`flows.cli.run`) it would also
keep whatever garbage happened to be uncollected at that moment, for good — there the collector
is only paused.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

#: Whether :func:`heavy_imports` freezes what exists once the imports are done; set by the
#: process entry (:func:`flows.cli.main`) only.
FREEZE = False


@contextmanager
def heavy_imports() -> Iterator[None]:
    """Run the ``with`` block (a command's imports) with the collector paused; see the module."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if FREEZE:
            gc.freeze()
        if was_enabled:
            gc.enable()
