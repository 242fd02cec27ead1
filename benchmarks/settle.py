"""Waiting for the local Prefect server to go idle between measured runs, and what it cost.

After a run ends, Prefect's server keeps working on it: it ingests the run's task-run events,
records the task runs, persists events. On this 2-core machine a 200-visit run keeps the server
at ~1 core for 10–13 s afterwards (measured), and whatever runs next competes with it for CPU and
for the server's SQLite write lock (Prefect's `create_flow_run` then answers 503 and the client
backs off 2, 4, 8 s). A fixed pause shorter than that turns a benchmark into a measurement of the
previous run's backlog. So each measured run — Ergon's or the baseline's — starts only once the
server has used less than :data:`IDLE_CPU` of a core for :data:`IDLE_SAMPLES` one-second samples.

:func:`server_cpu_seconds` also lets a benchmark report the server-side cost of a run (CPU from
its start until the server is idle again), Ergon's against the baseline's.

:func:`settle_heap` brings this process's heap to the state a run's own process is in: both sides
run in this one process, which holds ~240,000 objects once Prefect is loaded (~500,000 with
litellm); a full collection walks all of them (0.1 s, 0.23–0.4 s with litellm) and lands in
whichever run — Ergon's or the baseline's — crosses the collector's threshold, a pause as large
as the difference being measured. Ergon's own run processes (`ergon run`, Prefect's flow-run
process) freeze what start-up made (:mod:`flows.heap`); the benchmark collects and freezes before
every measured run, the baseline's too, which a hand-written flow's process would not have.

Only a server Ergon started (``ERGON_HOME/prefect/server.json``) can be watched, or one whose
process id the caller passes (``pid=``, a server the benchmark started itself); with a server
given by ``PREFECT_API_URL`` the functions fall back to a fixed pause and report ``None``.
"""

from __future__ import annotations

import gc
import json
import os
import time
from pathlib import Path

#: A server is idle below this share of one core...
IDLE_CPU = 0.05
#: ...for this many consecutive one-second samples.
IDLE_SAMPLES = 2
#: Give up waiting after this long (the figure printed then says so).
MAX_WAIT_SECONDS = 90.0
FALLBACK_SECONDS = 15.0


def _server_pid() -> int | None:
    from flows.settings import prefect_home

    state = Path(prefect_home()) / "server.json"
    try:
        return int(json.loads(state.read_text())["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def server_cpu_seconds(pid: int | None = None) -> float | None:
    """User + system CPU seconds used so far by the server's process group (None if unknown)."""
    pid = pid or _server_pid()
    if pid is None:
        return None
    try:
        group = os.getpgid(pid)
    except OSError:
        return None
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == group:  # field 5 of stat: the process group
            total += (int(fields[11]) + int(fields[12])) / ticks
    return total


def wait_until_idle(pid: int | None = None) -> float:
    """Block until the server is idle; returns the seconds waited."""
    started = time.perf_counter()
    last = server_cpu_seconds(pid)
    if last is None:
        time.sleep(FALLBACK_SECONDS)
        return FALLBACK_SECONDS
    quiet = 0
    while quiet < IDLE_SAMPLES and time.perf_counter() - started < MAX_WAIT_SECONDS:
        time.sleep(1.0)
        now = server_cpu_seconds(pid) or last
        quiet = quiet + 1 if now - last < IDLE_CPU else 0
        last = now
    return time.perf_counter() - started


def settle_heap() -> None:
    """Collect this process's garbage and freeze the rest, so no collection during the next
    measured run walks what earlier runs and imports left (see the module docstring)."""
    gc.collect()
    gc.freeze()


def measured(fn, *args, **kwargs) -> tuple[float, float | None]:
    """Run ``fn`` on an idle server and a settled heap: (wall seconds of ``fn``, server CPU
    seconds it caused, counted until the server is idle again)."""
    wait_until_idle()
    settle_heap()
    cpu_before = server_cpu_seconds()
    started = time.perf_counter()
    fn(*args, **kwargs)
    wall = time.perf_counter() - started
    wait_until_idle()
    cpu_after = server_cpu_seconds()
    server_cpu = None if cpu_before is None or cpu_after is None else cpu_after - cpu_before
    return wall, server_cpu
