"""A benchmark's own Ergon home and local Prefect server, stopped when the benchmark ends.

Benchmarks that run on Prefect set a temporary ``ERGON_HOME`` (unless one is given) and start
a local Prefect server in it on demand. They used to leave that server running: an idle server
still uses 3–18 % of a core ingesting and housekeeping, and a dozen left over from earlier
benchmarks and test runs made later figures on this 2-core machine up to twice as slow and far
noisier. :func:`prefect_for_benchmark` stops the server when the process exits, if it started it.

**Pinning.** On a machine with two cores or more, a server it starts runs on the last core and
the benchmark's own process (every thread of it) on the first: the server ingests a run's events
in bursts of a core for 10 s and more, which then lands on the measured flow's core too. It does
not make the figures steady: in runs of 11 the 200-node chain came out at 1.18× pinned and 1.25×
unpinned, each side's runs spreading as widely either way (see ``benchmarks/README.md``). Both
sides of every comparison are pinned alike. ``ERGON_BENCH_PIN=0`` turns it off (and it does not
apply to a server given by ``PREFECT_API_URL``).
"""

from __future__ import annotations

import atexit
import os
import tempfile
from collections.abc import Callable
from pathlib import Path


def prefect_for_benchmark(*, store: bool = True) -> str:
    """Point this process at a Prefect API (``PREFECT_API_URL``, or a local server it starts and
    stops at exit) and, with ``store``, set up Ergon's store; returns the API's URL."""
    os.environ.setdefault("ERGON_HOME", tempfile.mkdtemp(prefix="ergon-bench-"))
    from flows.prefect.config import configure_prefect_env

    configure_prefect_env()
    from flows.prefect import server

    starting = not os.environ.get("PREFECT_API_URL") and server.status() is None
    cores = sorted(os.sched_getaffinity(0))
    pin = starting and len(cores) >= 2 and os.environ.get("ERGON_BENCH_PIN", "1") != "0"
    if starting:
        atexit.register(server.stop)
    if pin:
        _pin_process({cores[-1]})  # the server, started now, inherits the last core
    url = server.ensure_api_url()
    if pin:
        _pin_process({cores[0]})
        print(f"pinned: the Prefect server to core {cores[-1]}, this benchmark to core {cores[0]}", flush=True)
    if store:
        from flows.store import db

        db.init_db()
    return url


def _pin_process(cores: set[int]) -> None:
    """Every thread of this process on ``cores`` (Linux pins per thread; new threads inherit)."""
    for tid in os.listdir("/proc/self/task"):
        try:
            os.sched_setaffinity(int(tid), cores)
        except OSError:  # a thread that just ended
            pass


def harness_home(prefix: str) -> tuple[Path, Callable[[], object]]:
    """A kill harness's own fresh Ergon home (``ERGON_HOME``: its store, migrated here, and the
    logs it reads after the fact) and a Prefect API — the one ``PREFECT_API_URL`` names, else a
    local server started in that home; returns the home and what stops the server it started
    (nothing, when it started none). Not pinned: the harness measures no ratio."""
    home = Path(tempfile.mkdtemp(prefix=prefix))
    os.environ["ERGON_HOME"] = str(home)
    os.environ.pop("ERGON_DATABASE_URL", None)
    from flows.prefect.config import configure_prefect_env

    configure_prefect_env()
    from flows.prefect import server
    from flows.store import db

    ours = not os.environ.get("PREFECT_API_URL")
    server.ensure_api_url()
    db.init_db()
    return home, (server.stop if ours else lambda: None)
