"""Many writers on one SQLite file: no "database is locked", no lost or duplicated sequence numbers.

Threads share one engine (foreach / branch bodies); processes each have their own (the flow, a
worker, the dashboard, the CLI). Both must wait for the write lock instead of failing.
"""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from flows.store import artifacts as artifact_store
from flows.store import runs as run_store
from flows.store import visits as visit_store

ROOT = Path(__file__).resolve().parents[2]
THREADS, WRITES = 8, 50
PROCESSES, PROCESS_WRITES = 2, 25  # each process pays ~1 s of imports; keep the suite quick


def _write_visits(run_id: str, count: int, tag: str) -> None:
    for i in range(count):
        visit = visit_store.start_visit(run_id, f"{tag}-{i}", "tool", input={"i": i})
        diff = [{"op": "add", "path": f"/k{i}", "old": None, "new": i}]
        visit_store.finish_visit(visit.id, output={"i": i}, context_diff=diff)


def _run_threads(jobs) -> None:
    with ThreadPoolExecutor(max_workers=THREADS) as pool:
        futures = [pool.submit(*job) for job in jobs]
        errors = [f.exception() for f in futures if f.exception() is not None]
    assert errors == [], errors[:3]


def test_threads_writing_visits_of_different_runs(store):
    runs = [run_store.create_run("d").id for _ in range(THREADS)]
    _run_threads([(_write_visits, run_id, WRITES, "n") for run_id in runs])
    for run_id in runs:
        visits = visit_store.visits_for_run(run_id)
        assert [v.sequence for v in visits] == list(range(1, WRITES + 1))
        assert all(v.status == "completed" for v in visits)


def test_threads_writing_visits_of_one_run_get_distinct_sequences(store):
    run_id = run_store.create_run("d").id
    _run_threads([(_write_visits, run_id, 25, f"t{t}") for t in range(THREADS)])
    assert [v.sequence for v in visit_store.visits_for_run(run_id)] == list(range(1, THREADS * 25 + 1))


def test_threads_versioning_one_artifact_key(store):
    run_id = run_store.create_run("d").id
    _run_threads([(lambda: [artifact_store.record_artifact(run_id, "log", "json", {"i": i}) for i in range(10)],)
                  for _ in range(THREADS)])
    assert [a.version for a in artifact_store.artifacts_for_run(run_id)] == list(range(1, THREADS * 10 + 1))


def test_processes_writing_to_one_file(store, tmp_path):
    runs = [run_store.create_run("d").id for _ in range(PROCESSES)]
    code = (
        "import sys; sys.path.insert(0, {tests!r}); from {module} import _write_visits; "
        "_write_visits(sys.argv[1], {writes}, 'p')"
    ).format(tests=str(Path(__file__).parent), module=Path(__file__).stem, writes=PROCESS_WRITES)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}  # ERGON_HOME is tmp_path (the store fixture)
    procs = [subprocess.Popen([sys.executable, "-c", code, run_id], env=env, stderr=subprocess.PIPE, text=True)
             for run_id in runs]
    errors = [p.communicate(timeout=180)[1] for p in procs]
    assert [p.returncode for p in procs] == [0] * PROCESSES, errors
    for run_id in runs:
        assert len(visit_store.visits_for_run(run_id)) == PROCESS_WRITES
