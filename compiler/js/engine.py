"""The JavaScript sandbox: V8 (mini-racer) in a child process, with a time and a memory cap.

Ergon runs JavaScript written by definition authors (JST prompt templates, ``runJavascriptCode``
steps) over data that comes from models and users, and parses Handlebars and JavaScript when it
checks definitions. All of it happens in one child process (:mod:`compiler.js.worker`), started
on first use and kept for the life of this process; nothing here imports V8, so a process that
never meets JavaScript never starts it (``ergon check`` of definitions without it stays as fast).

**What the code can reach.** ECMAScript's built-ins, the bundled libraries (``vendor/``: see its
README) and what Ergon passes in as JSON. V8 alone has no file, network, process or module
access, and the worker wraps no Python function into it: ``require``, ``process``, ``fetch``,
``XMLHttpRequest`` do not exist and a dynamic ``import()`` is rejected (tests/js).

**Caps.** Each evaluation stops after ``time_limit`` seconds (:data:`TIME_LIMIT`) and when its
heap passes ``memory_limit`` bytes (:data:`MEMORY_LIMIT`); either raises :class:`JsLimitError`.
Memory outside V8's heap accounting (typed arrays) is capped by the worker's own ``RLIMIT_DATA``,
and an allocation V8 answers by aborting its process (V8 does so for some, e.g. filling
``new Array(2**30)``) kills only the worker: this process gets a :class:`JsLimitError` and the
next evaluation starts a new worker. That is why V8 runs in a child process at all: in-process,
such a template would end the run's whole process.

**Isolation.** Every evaluation gets a new V8 isolate with the runtime bundle loaded fresh,
and it is thrown away afterwards: nothing a template or a step's code does (globals, changed
prototypes, a heap left full) reaches the next one. Parsing for the checker reuses one long-lived
context: it only parses text, and runs none of it.

The cost, measured on the 2-core development machine with ``benchmarks/js_sandbox.py`` (best of
50, a 10-item ``#each`` render; its README has the table): starting the worker 0.1–0.2 s, once
per process; an evaluation in a fresh isolate ~13 ms (a new isolate ~2.5 ms, loading the runtime
bundle ~6 ms more, then compiling the template in a cold isolate and the pipe), against ~0.35 ms
for the same render in a reused context; an analysis call ~0.7 ms. A prompt costs one fresh
isolate per Handlebars or JST segment, next to a model call of hundreds of milliseconds:
isolation is worth the ~13 ms.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import subprocess
import sys
import threading
from functools import lru_cache
from pathlib import Path
from typing import Any

from compiler.errors import ErgonError

__all__ = ["MEMORY_LIMIT", "TIME_LIMIT", "JsError", "JsLimitError", "analyse", "global_names", "run"]

#: Seconds an evaluation may run.
TIME_LIMIT = 2.0
#: Bytes of V8 heap an evaluation may use (the runtime bundle itself takes ~5 MB).
MEMORY_LIMIT = 128 * 2**20
#: Seconds the worker gets to start (V8 and the analysis bundle) before it is taken as broken.
START_LIMIT = 30.0
#: Functions of ``vendor/analysis.js`` the checker may call.
ANALYSES = frozenset({"handlebars", "javascript", "prepareJst", "globalNames"})
_WORKER = Path(__file__).resolve().with_name("worker.py")


class JsError(ErgonError):
    """JavaScript failed: a syntax error, an exception it threw, or a cap it hit.

    ``line`` and ``column`` (both 1-based) say where in the evaluated text, when known.
    """

    def __init__(self, message: str, line: int | None = None, column: int | None = None):
        self.reason = message
        self.line = line
        self.column = column
        where = f" (line {line}, column {column})" if line is not None and column is not None else \
            f" (line {line})" if line is not None else ""
        super().__init__(message + where)


class JsLimitError(JsError):
    """The evaluation ran out of time or memory (``kind`` is ``"time"`` or ``"memory"``)."""

    def __init__(self, kind: str, time_limit: float, memory_limit: int, *, process: bool = False):
        self.kind = kind
        if kind == "time":
            text = f"the JavaScript ran longer than its time limit of {time_limit:g} s and was stopped"
        elif process:
            text = "the JavaScript exhausted the sandbox's memory: V8 stopped its process (a new one is started for the next evaluation)"
        else:
            text = f"the JavaScript used more than its memory limit of {memory_limit // 2**20} MB and was stopped"
        super().__init__(text)


class _Worker:
    """The child process, one request at a time."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.proc: subprocess.Popen[bytes] | None = None
        self.pid = 0
        self.buffer = b""
        self.next_id = 0

    def _start(self) -> None:
        self.stop()
        # stderr is V8's: a fatal error prints its diagnosis there before the process aborts
        self.proc = subprocess.Popen([sys.executable, str(_WORKER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, close_fds=True)
        self.pid = os.getpid()
        self.buffer = b""
        ready = self._read(START_LIMIT)
        if not ready.get("ready"):
            self.stop()
            from compiler.js import INSTALL_HINT, available

            if not available():
                raise JsError(f"the JavaScript sandbox needs the `mini-racer` package, which is not installed: {INSTALL_HINT}")
            raise JsError("the JavaScript sandbox did not start")

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None or self.pid != os.getpid():
            return
        try:
            if proc.stdin:
                proc.stdin.close()
            proc.wait(timeout=2)
        except (OSError, subprocess.TimeoutExpired):
            proc.kill()
            proc.wait()

    def _read(self, timeout: float) -> dict[str, Any]:
        """One answer line, or ``{"lost": "died"}`` at the end of the worker's output, or
        ``{"lost": "hung"}`` when it said nothing for ``timeout`` seconds."""
        assert self.proc is not None and self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.buffer:
            ready, _, _ = select.select([fd], [], [], timeout)
            if not ready:
                return {"lost": "hung"}
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return {"lost": "died"}
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return json.loads(line)

    def ask(self, request: dict[str, Any], timeout: float) -> dict[str, Any]:
        """Send ``request``: its answer, or ``{"lost": "died" | "hung"}`` when the worker died or
        overran ``timeout`` (it is then stopped, and the next request starts a new one)."""
        with self.lock:
            if self.proc is None or self.pid != os.getpid() or self.proc.poll() is not None:
                self._start()
            assert self.proc is not None and self.proc.stdin is not None
            self.next_id += 1
            try:
                self.proc.stdin.write(json.dumps({"id": self.next_id, **request}, default=str).encode() + b"\n")
                self.proc.stdin.flush()
            except OSError:
                answer: dict[str, Any] = {"lost": "died"}
            else:
                answer = self._read(timeout)
            if "lost" in answer:
                self.proc.kill()
                self.proc.wait()
                self.proc = None
            return answer


_worker = _Worker()
atexit.register(_worker.stop)


@lru_cache(maxsize=4096)
def _analysed(function: str, text: str) -> str:
    answer = _worker.ask({"analyse": function, "text": text}, START_LIMIT)
    if "value" not in answer:
        detail = answer.get("failure") or "the sandbox process stopped"
        raise JsError(f"JavaScript analysis failed: {detail}")
    return json.dumps(answer["value"])


def analyse(function: str, text: str) -> dict[str, Any]:
    """The answer of ``ErgonAnalysis.<function>(text)`` (``vendor/analysis.js``), cached by text."""
    if function not in ANALYSES:
        raise ValueError(f"no analysis named {function!r}")
    return json.loads(_analysed(function, text))


@lru_cache(maxsize=1)
def global_names() -> frozenset[str]:
    """The global names of a bare V8 context: ECMAScript's built-ins (``Math``, ``JSON``…)."""
    return frozenset(json.loads(_analysed("globalNames", "")))


def run(payload: dict[str, Any], *, time_limit: float = TIME_LIMIT, memory_limit: int = MEMORY_LIMIT) -> Any:
    """Run one operation of ``vendor/runtime.js`` in a fresh isolate: its JSON value.

    Raises :class:`JsError` for an exception the JavaScript threw (with its line and column
    when it has them) and :class:`JsLimitError` when it hit a cap.
    """
    # the worker stops the evaluation at time_limit; past that, it is the worker that hangs
    answer = _worker.ask({"run": payload, "time_limit": time_limit, "memory_limit": memory_limit}, time_limit + START_LIMIT)
    if "lost" in answer:  # V8 aborts its process on some allocations; a worker that hangs is stopped
        died = answer["lost"] == "died"
        raise JsLimitError("memory" if died else "time", time_limit, memory_limit, process=died)
    if "limit" in answer:
        raise JsLimitError(answer["limit"], time_limit, memory_limit)
    if "failure" in answer:
        raise JsError(f"the JavaScript sandbox failed: {answer['failure']}")
    result = answer["value"]
    if "error" in result:
        error = result["error"]
        name = error.get("name") or "Error"
        message = error.get("message") or ""
        line, column = error.get("line"), error.get("column")
        text = message if name == "Error" else f"{name}: {message}"
        raise JsError(text, line, None if column is None else column + 1)
    return result["value"]
