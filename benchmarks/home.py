"""A benchmark's own Ergon home and local Prefect server, stopped when the benchmark ends.

Benchmarks that run on Prefect set a temporary ``ERGON_HOME`` (unless one is given) and start
a local Prefect server in it on demand. They used to leave that server running: an idle server
still uses 3–18 % of a core ingesting and housekeeping, and a dozen left over from earlier
benchmarks and test runs made later figures on this 2-core machine up to twice as slow and far
noisier. :func:`prefect_for_benchmark` stops the server when the process exits, if it started it.
"""

from __future__ import annotations

import atexit
import os
import tempfile


def prefect_for_benchmark(*, store: bool = True) -> str:
    """Point this process at a Prefect API (``PREFECT_API_URL``, or a local server it starts and
    stops at exit) and, with ``store``, set up Ergon's store; returns the API's URL."""
    os.environ.setdefault("ERGON_HOME", tempfile.mkdtemp(prefix="ergon-bench-"))
    from flows.prefect.config import configure_prefect_env

    configure_prefect_env()
    from flows.prefect import server

    if not os.environ.get("PREFECT_API_URL") and server.status() is None:
        atexit.register(server.stop)
    url = server.ensure_api_url()
    if store:
        from flows.store import db

        db.init_db()
    return url
