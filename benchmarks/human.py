"""Human-task benchmark: latency from an answer to the next node starting (aim: median ≤ 0.5 s, max ≤ 1 s).

A process waits on a human task in a separate `ergon run` process (it asks Prefect for its
answer every ``ANSWER_POLL_SECONDS``, 0.25 s). This script answers the task the way `ergon tasks answer` does
(:func:`flows.humans.answer` → validate, record, resume), then reads from the store when the
next node's visit started. Both timestamps come from the store (one clock). Repeated N times.

Usage: ``python benchmarks/human.py [--repeat N]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.home import prefect_for_benchmark  # noqa: E402
from flows.settings import ANSWER_POLL_SECONDS  # noqa: E402

PROCESS = """
format_version: 1
process: bench_human
initial: ask
context:
  schema: {type: object, properties: {ok: {type: boolean}, after: {type: string}}}
nodes:
  ask:
    type: human_task
    task:
      title: Proceed?
      fields: [{name: ok, type: boolean, required: true}]
    writes: [ok]
    transitions: [{to: next}]
  next: {type: tool, config: {context_update: {after: "yes"}}, writes: [after], transitions: [{to: done}]}
  done: {type: final}
"""


def _wait_until_paused_in_prefect(flow_run_id: str, timeout: float = 60.0) -> None:
    """A person answers a task that is really waiting: the flow run's state is Paused in Prefect
    (an answer given in the instant before is retried by the resume hook until the pause lands,
    which would measure the pause's set-up, not the answer's latency)."""
    from prefect import get_client

    deadline = time.monotonic() + timeout
    with get_client(sync_client=True) as client:
        while time.monotonic() < deadline:
            state = client.read_flow_run(flow_run_id).state
            if state is not None and state.is_paused():
                time.sleep(0.5)  # the input schema is saved right after the state
                return
            time.sleep(0.1)
    raise AssertionError("the run never paused in Prefect")


def one(env: dict) -> float:
    from flows import humans
    from flows.prefect.resume import register
    from flows.store import runs as run_store
    from flows.store import tasks as task_store
    from flows.store import visits as visit_store

    register()
    proc = subprocess.Popen([sys.executable, "-m", "flows.cli", "run", "bench_human", "--json"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        task = None
        while time.monotonic() < deadline and task is None:
            rows, _ = task_store.list_tasks(status="pending")
            task = next((t for t in rows if run_store.get_run(t.run_id).status == "paused"), None)
            time.sleep(0.1)
        assert task is not None, proc.stderr.read() if proc.poll() is not None else "no task"
        _wait_until_paused_in_prefect(run_store.get_run(task.run_id).prefect_flow_run_id)
        answered = humans.answer(task.id, "bench", {"ok": True}, via="api").task
        proc.communicate(timeout=120)
        nxt = next(v for v in visit_store.visits_for_run(task.run_id) if v.node_id == "next")
        return (nxt.started_at - answered.answered_at).total_seconds()
    finally:
        if proc.poll() is None:
            proc.kill()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    prefect_for_benchmark()
    folder = Path(tempfile.mkdtemp(prefix="ergon-bench-defs-"))
    (folder / "bench_human.yaml").write_text(PROCESS)
    env = {**os.environ, "ERGON_DEFINITIONS": str(folder)}
    latencies = [one(env) for _ in range(args.repeat)]
    print(f"answer → next node started, {args.repeat} runs: median {statistics.median(latencies):.2f} s, "
          f"max {max(latencies):.2f} s  (aim: median <= 0.5 s, max <= 1 s; answer poll {ANSWER_POLL_SECONDS} s)")


if __name__ == "__main__":
    main()
