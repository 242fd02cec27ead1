"""Where a run's process freezes what its start-up made (:mod:`flows.heap`), seen from inside a
run: a tool node reports the collector of the process running its visit. The `ergon` command and
the flow-run process a worker starts for a deployment run one run and end: they freeze; a process
that lives on (here pytest's own, calling :func:`flows.runs.start`) does not."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from deploy_helpers import ROOT, Worker, deploy, run_in, start_deployment, wait_for

pytestmark = pytest.mark.prefect

HEAP_STATE = """
format_version: 1
process: heap_probe
initial: look
context:
  schema: {type: object, properties: {frozen: {type: integer}, collector_on: {type: boolean}}}
nodes:
  look: {type: tool, tool: heap_state, writes: [frozen, collector_on], transitions: [{to: done}]}
  done: {type: final}
"""


def test_a_run_in_a_process_that_lives_on_freezes_nothing(run_def) -> None:
    import gc

    frozen = gc.get_freeze_count()
    result = run_def({"heap_probe.yaml": HEAP_STATE}, "heap_probe")
    assert result["status"] == "completed"
    assert result["context"]["frozen"] == frozen and result["context"]["collector_on"] is True


def test_ergon_run_freezes_what_start_up_made(prefect_api, store, definitions) -> None:
    # `ergon run` (also what the dashboard and triggers start) runs one run and ends.
    (definitions / "heap_probe.yaml").write_text(HEAP_STATE)
    done = subprocess.run([sys.executable, "-m", "flows.cli", "run", "heap_probe", "--json"], cwd=ROOT,
                          env=os.environ, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(done.stdout)
    assert result["status"] == "completed" and result["context"]["collector_on"] is True
    assert result["context"]["frozen"] > 100_000, "Prefect's modules alone make more objects than this"


def test_a_flow_run_process_freezes_what_start_up_made(deploy_env, definitions, pool, tmp_path):
    # The worker's flow-run process runs one run and ends: Prefect's, the compiler's and the store's
    # start-up objects are frozen there, so no collection during the run walks them (flows.heap).
    (definitions / "heap_probe.yaml").write_text(HEAP_STATE)
    deploy("heap_probe", pool, deploy_env, tmp_path / "prefect.yaml")
    worker = Worker(pool, deploy_env, tmp_path / "worker.log").start()
    try:
        prefect_run = start_deployment("heap_probe/heap_probe", {})
        done = wait_for("the run to end", run_in(prefect_run.id, "completed", "failed", "crashed"),
                        diagnose=worker.tail)
    finally:
        worker.stop()
    assert done.status == "completed", done.error
    assert done.context["collector_on"] is True
    assert done.context["frozen"] > 100_000, "Prefect's modules alone make more objects than this"
