"""A run's process killed after the store recorded the run's end but before Prefect heard it
left the run's flow run ``Running`` in Prefect for ever (found by the kill -9 harness). The next
command that looks (`runs list`) gives the flow run the store's end; a run whose process ended
normally is never looked at again."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
from datetime import timedelta

import pytest
from stopped_runs import ERGON, TWO

pytestmark = pytest.mark.prefect


def _flow_run_state(flow_run_id: str) -> str:
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        return client.read_flow_run(flow_run_id).state.type.value


def test_a_run_killed_between_its_end_and_prefect_hearing_it_gets_its_flow_run_completed(
        prefect_api, store, definitions):
    (definitions / "two_steps.yaml").write_text(TWO)
    env = {**os.environ, "ERGON_DATABASE_URL": store, "ERGON_DEFINITIONS": str(definitions), "COLUMNS": "200"}
    # `ergon run`'s path, killed the moment the store has the run's end (what kill -9 hit)
    script = textwrap.dedent("""
        import os
        from flows import runs
        from flows.catalog import Catalog
        from flows.execution.recorder import StoreRecorder

        recorded = StoreRecorder.end
        def end_then_die(self, status, *args, **kwargs):
            recorded(self, status, *args, **kwargs)
            print(self.run_id, flush=True)
            os._exit(9)
        StoreRecorder.end = end_then_die
        runs.prepare()
        catalog = Catalog.load("two_steps")
        runs.start(runs.compile_definition("two_steps", catalog=catalog), {}, catalog=catalog)
    """)
    died = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=180)
    assert died.returncode == 9, died.stdout + died.stderr
    run_id = died.stdout.strip().splitlines()[-1]
    from flows.store import runs as run_store

    run = run_store.get_run(run_id)
    assert run.status == "completed" and run.prefect_flow_run_id
    assert _flow_run_state(run.prefect_flow_run_id) == "RUNNING"  # nothing executes it any more

    listed = subprocess.run([*ERGON, "runs", "list", "--json"], env=env, capture_output=True, text=True, timeout=120)
    assert listed.returncode == 0, listed.stderr
    [row] = [r for r in json.loads(listed.stdout)["runs"] if r["run_id"] == run_id]
    assert row["status"] == "completed"
    assert _flow_run_state(run.prefect_flow_run_id) == "COMPLETED"
    assert run_store.ended_unsettled() == []


def test_a_run_that_ended_normally_names_no_process(run_def):
    from flows.store import runs as run_store

    result = run_def({"two_steps.yaml": TWO}, "two_steps", {})
    run = run_store.get_run(result["run_id"])
    assert run.status == "completed" and run.pid is None
    assert _flow_run_state(run.prefect_flow_run_id) == "COMPLETED"


def test_only_ended_runs_whose_process_is_gone_are_unsettled(store, definitions):
    from flows import runs
    from flows.store import runs as run_store
    from flows.store.models import utcnow

    (definitions / "two_steps.yaml").write_text(TWO)
    gone = int(subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                              capture_output=True, text=True).stdout)

    def ended(status, pid, host, ago):
        run = runs.create(runs.compile_definition("two_steps"), {})
        run_store.set_run_status(run.id, "running", pid=pid, host=host)
        run_store.set_run_status(run.id, status, now=utcnow() - ago)
        return run.id

    here, recently, long_ago = socket.gethostname(), timedelta(seconds=5), timedelta(hours=1)
    dead_here = ended("completed", gone, here, recently)
    alive_here = ended("failed", os.getpid(), here, recently)  # its process is still telling Prefect
    elsewhere_recent = ended("cancelled", gone, "another-host", recently)
    elsewhere_old = ended("failed", gone, "another-host", long_ago)
    crashed = ended("crashed", gone, here, recently)  # crash detection marks its flow runs Crashed

    unsettled = {r.id for r in run_store.ended_unsettled(heartbeat_timeout=timedelta(minutes=5))}
    assert unsettled == {dead_here, elsewhere_old}
    assert not unsettled & {alive_here, elsewhere_recent, crashed}
