"""The sandbox process: V8 (mini-racer) behind a pipe, started by :mod:`compiler.js.engine`.

It reads one JSON request per line on stdin and writes one JSON answer per line on stdout:

* ``{"id", "analyse": FUNCTION, "text"}`` calls ``ErgonAnalysis.FUNCTION(text)`` of
  ``vendor/analysis.js`` in one long-lived context (those functions only parse: no code of a
  definition ever runs there) → ``{"id", "value": <its JSON answer>}``;
* ``{"id", "run": PAYLOAD, "time_limit", "memory_limit"}`` loads ``vendor/runtime.js`` into a
  **new** V8 isolate, calls ``__ergon_run(PAYLOAD)`` once and throws the isolate away →
  ``{"id", "value": <its JSON answer>}`` (awaited within the time limit when it is a Promise),
  or ``{"id", "limit": "time" | "memory"}`` when V8 stopped the evaluation at a cap.

Nothing is exposed to JavaScript: no Python function is wrapped into V8, so code running there
has ECMAScript and the bundles' libraries, and no file, network, process or clock-setting
access. Its memory is capped twice: mini-racer's hard limit on the isolate's heap (a clean
``"memory"`` answer), and ``RLIMIT_DATA`` on this whole process, for what the heap limit does
not count (typed arrays' buffers) or cannot stop (V8 aborts the process on some allocations,
e.g. a sparse array of 2**30 elements filled at once). The parent sees such a death as the
memory cap and starts a new process.

Standard library and mini-racer only: it runs as a script, without importing Ergon.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import resource
import sys
import threading
import time
from pathlib import Path

from py_mini_racer import JSOOMException, JSPromise, JSTimeoutException, MiniRacer, mini_racer

VENDOR = Path(__file__).resolve().with_name("vendor")
#: How much more data memory than it has once V8 is up the process may take (``RLIMIT_DATA``):
#: V8 reserves ~570 MB of it at start-up, which stays mostly unused.
PROCESS_HEADROOM = 768 * 2**20


def _data_size() -> int | None:
    """This process's data memory (``VmData``, bytes), where /proc tells it."""
    try:
        status = Path("/proc/self/status").read_text()
    except OSError:
        return None
    m = re.search(r"^VmData:\s+(\d+) kB", status, re.M)
    return int(m.group(1)) * 1024 if m else None


class Worker:
    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, name="mini-racer", daemon=True).start()
        self.runtime = (VENDOR / "runtime.js").read_text(encoding="utf-8")
        self._analysis_cm = mini_racer(self.loop)
        self.analysis: MiniRacer = self._analysis_cm.__enter__()
        self.analysis.eval((VENDOR / "analysis.js").read_text(encoding="utf-8"))
        size = _data_size()
        if size is not None:
            limit = size + PROCESS_HEADROOM
            resource.setrlimit(resource.RLIMIT_DATA, (limit, resource.getrlimit(resource.RLIMIT_DATA)[1]))

    def analyse(self, function: str, text: str) -> object:
        return json.loads(self.analysis.call(f"ErgonAnalysis.{function}", text))

    def run(self, payload: object, time_limit: float, memory_limit: int) -> dict:
        with mini_racer(self.loop) as ctx:
            ctx.set_hard_memory_limit(memory_limit)
            ctx.eval(self.runtime)
            started = time.monotonic()
            try:
                answer = ctx.eval(f"__ergon_run({json.dumps(json.dumps(payload))})", timeout_sec=time_limit)
                if isinstance(answer, JSPromise):  # the code's value was a Promise: wait for it, in the same time
                    answer = answer.get(timeout=max(0.001, time_limit - (time.monotonic() - started)))
            except JSTimeoutException:
                return {"limit": "time"}
            except JSOOMException:
                return {"limit": "memory"}
            if ctx.was_hard_memory_limit_reached():
                return {"limit": "memory"}
        return {"value": json.loads(str(answer))}


def main() -> None:
    worker = Worker()
    out = sys.stdout
    out.write(json.dumps({"ready": True}) + "\n")
    out.flush()
    for line in sys.stdin:
        request = json.loads(line)
        answer: dict
        try:
            if "analyse" in request:
                answer = {"value": worker.analyse(request["analyse"], request.get("text", ""))}
            else:
                answer = worker.run(request["run"], float(request["time_limit"]), int(request["memory_limit"]))
        except MemoryError:
            answer = {"limit": "memory"}
        except Exception as exc:  # noqa: BLE001 - reported to the parent, which raises it as a JsError
            answer = {"failure": f"{type(exc).__name__}: {str(exc)[:500]}"}
        out.write(json.dumps({"id": request.get("id"), **answer}) + "\n")
        out.flush()
    # stdin closed: the parent is done (or gone). Exit at once: finalizing V8's contexts at
    # interpreter shutdown can wait on their event loop forever.
    os._exit(0)


if __name__ == "__main__":
    main()
