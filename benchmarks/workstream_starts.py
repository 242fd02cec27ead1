"""Workstreams launched together: from the launch to the last child's body running.

An agent that launches several workstreams at once starts each as a Prefect subflow of its visit's
task run. Measured side by side in one process, each round on an idle local Prefect server
(``benchmarks/settle.py``), ``--children`` (3) children whose bodies wait until all have begun:

* **Prefect, at once** — what a Prefect user writes: ``asyncio.gather`` of the subflow calls.
* **Ergon** — :func:`flows.prefect.workstreams.run_workstream`, which starts them one at a time.

Prints, per side, the median and max of launch → last child running and how many requests
Prefect's client retried after a 503 (its SQLite server's ``SQLITE_BUSY``). Usage:
``python benchmarks/workstream_starts.py [--children 3] [--rounds 7]``.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.home import prefect_for_benchmark  # noqa: E402
from benchmarks.settle import wait_until_idle  # noqa: E402


class Retries(logging.Handler):
    """Counts the client's "retryable status code" messages."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        if "retryable status code" in record.getMessage():
            self.count += 1


def launch(children: int, side: str) -> tuple[float, int]:
    from prefect import flow, task

    from flows.prefect.workstreams import run_workstream

    @flow(name="bench-child", persist_result=False, validate_parameters=False)
    async def child(key: str, body) -> dict:
        return await body(key)

    async def measured() -> float:
        everyone = asyncio.Event()
        began: list[float] = []
        started = time.perf_counter()

        async def body(_key: str | None) -> dict:
            began.append(time.perf_counter() - started)
            if len(began) == children:
                everyone.set()
            await everyone.wait()
            return {"status": "completed", "error": None, "summary": None}

        if side == "ergon":
            await asyncio.gather(*(run_workstream(str(i), f"launch-{i}", body) for i in range(children)))
        else:
            await asyncio.gather(*(child.with_options(flow_run_name=f"child {i}")(str(i), body) for i in range(children)))
        return max(began)

    @task(persist_result=False)
    async def visit() -> float:
        return await measured()

    @flow(name=f"bench-workstreams-{side}", persist_result=False)
    async def parent() -> float:
        return await visit()

    retries = Retries()
    client_log = logging.getLogger("prefect.client")
    client_log.addHandler(retries)
    client_log.setLevel(logging.DEBUG)
    try:
        return asyncio.run(parent()), retries.count
    finally:
        client_log.removeHandler(retries)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--children", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    prefect_for_benchmark(store=False)
    results: dict[str, list[tuple[float, int]]] = {"prefect": [], "ergon": []}
    for _ in range(args.rounds):
        for side in results:
            wait_until_idle()
            results[side].append(launch(args.children, side))
    print(f"{args.children} workstreams launched at once, {args.rounds} rounds, each on an idle server")
    for side, rows in results.items():
        waits = [w for w, _ in rows]
        print(f"{side:<8} launch -> last child running: median {statistics.median(waits):.2f} s, "
              f"max {max(waits):.2f} s; 503s retried: {sum(r for _, r in rows)} in {len(rows)} rounds")


if __name__ == "__main__":
    main()
