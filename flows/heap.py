"""Heavy imports with the garbage collector paused, and a one-run process's start-up heap frozen.

Importing the compiler makes about 70,000 objects that live as long as the process (modules,
classes, the validators pydantic builds for every IR model) and almost no garbage; importing
litellm makes about 330,000 more. CPython's collector does not know they will live on: it ran
127 times during one `ergon check` of a single definition (41–65 ms of the command), and six
full collections during litellm's import, 0.9 s of a 2.7 s import that takes 1.7 s with the
collector paused. Once they exist, every full collection walks them again: 0.23 s for the
~500,000 objects a process holds once Prefect and litellm are loaded, 0.1 s without litellm — a
pause that lands in whichever run crosses the collector's threshold.

:func:`heavy_imports` pauses the collector around a block of imports. In a process that runs one
thing and ends (:func:`one_run_process`) it then moves every object made so far into the permanent
generation (:func:`gc.freeze`), so no later collection, nor the one at exit, walks them again.
Those processes are

* the `ergon` command (:func:`flows.cli.main` calls :func:`mark_one_run_process`): `ergon run`,
  which is also what the dashboard and triggers start for a run, `ergon check`, and the rest —
  a command that serves (`ergon serve`) freezes what its start-up made, as a server should;
* the flow-run process a Prefect worker or ``serve`` starts for a deployment's run
  (``python -m prefect.engine``, recognised by its main module).

In a process that lives on — tests, a script calling :func:`flows.runs.start`, the dashboard's
server — the collector is only paused: freezing there would keep, for good, whatever garbage was
uncollected at that moment and whatever of the caller's objects later become garbage in a cycle.
(The dashboard's server freezes once, itself, after collecting, when its warm-up has imported
what its pages need: ``ui/warmup.py``.)

``garbage=True`` is for imports that leave cyclic garbage behind (litellm's leaves ~165,000
objects): in a one-run process they are collected before the freeze, so they are not kept.
"""

from __future__ import annotations

import gc
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

#: The module Prefect's workers and ``serve`` run a deployment's flow-run process as.
PREFECT_ENGINE_MAIN = "prefect.engine"

_one_run_process = False
# Blocks may nest (`ergon run`'s imports reach code that imports more) and run on two threads at
# once (litellm is imported by whichever model call comes first): the last block out decides.
_lock = threading.Lock()
_open_blocks = 0
_was_enabled = False
_left_garbage = False


def mark_one_run_process() -> None:
    """Say that this process runs one command or one run and ends (the process entry calls it)."""
    global _one_run_process
    _one_run_process = True


def one_run_process() -> bool:
    """Whether this process runs one thing and ends: the `ergon` command, or Prefect's flow-run process."""
    if _one_run_process:
        return True
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    return getattr(spec, "name", None) == PREFECT_ENGINE_MAIN


@contextmanager
def heavy_imports(*, garbage: bool = False) -> Iterator[None]:
    """Run the ``with`` block (imports) with the collector paused; see the module docstring.

    A caller that turned the collector off itself keeps it off, and nothing is frozen for it.
    """
    global _open_blocks, _was_enabled, _left_garbage
    with _lock:
        if _open_blocks == 0:
            _was_enabled, _left_garbage = gc.isenabled(), False
            gc.disable()
        _open_blocks += 1
    try:
        yield
    finally:
        with _lock:
            _open_blocks -= 1
            _left_garbage = _left_garbage or garbage
            if _open_blocks == 0 and _was_enabled:
                if one_run_process():
                    if _left_garbage:
                        gc.collect()
                    gc.freeze()
                gc.enable()
