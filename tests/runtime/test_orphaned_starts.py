"""A run recorded but never started, because its process died first (killed ~2 s after
`ergon run`, before the flow began), is found: marked crashed by the next command that looks —
`runs list` included — and `ergon runs resume` runs it to the end."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
from stopped_runs import ERGON, TWO

pytestmark = pytest.mark.prefect


def test_a_run_whose_process_died_before_it_started_is_found_and_resumed(prefect_api, store, definitions):
    (definitions / "two_steps.yaml").write_text(TWO)
    env = {**os.environ, "ERGON_DATABASE_URL": store, "ERGON_DEFINITIONS": str(definitions), "COLUMNS": "200"}
    # what `ergon run` does first (record the run), then the process dies before starting it
    script = textwrap.dedent("""
        import os
        from flows import runs
        compiled = runs.compile_definition("two_steps")
        print(runs.create(compiled, {}).id, flush=True)
        os._exit(9)
    """)
    made = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    run_id = made.stdout.strip().splitlines()[-1]
    from flows.store import runs as run_store

    assert run_store.get_run(run_id).status == "pending"
    listed = subprocess.run([*ERGON, "runs", "list", "--json"], env=env, capture_output=True, text=True, timeout=120)
    [row] = [r for r in json.loads(listed.stdout)["runs"] if r["run_id"] == run_id]
    assert row["status"] == "crashed", "runs list still shows a dead start as pending"
    resumed = subprocess.run([*ERGON, "runs", "resume", run_id], env=env, capture_output=True, text=True, timeout=180)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert run_store.get_run(run_id).status == "completed"


def test_a_pending_run_whose_owner_lives_is_left_alone(store, definitions):
    from flows import runs
    from flows.store import runs as run_store

    (definitions / "two_steps.yaml").write_text(TWO)
    run = runs.create(runs.compile_definition("two_steps"), {})
    assert run_store.mark_stale_runs_crashed() == []
    assert run_store.get_run(run.id).status == "pending" and run_store.get_run(run.id).pid == os.getpid()


def test_a_run_being_resumed_belongs_to_the_resuming_process(store, definitions, monkeypatch):
    """Between claiming a stopped run and its flow body starting, `ergon runs resume` owns it: crash
    detection (another `runs list`, the dashboard) does not take the dead process it replaces for
    the run's owner and mark it crashed under the resume's feet."""
    from flows import runs
    from flows.catalog import Catalog
    from flows.runs import lifecycle
    from flows.store import runs as run_store

    (definitions / "two_steps.yaml").write_text(TWO)
    run = runs.create(runs.compile_definition("two_steps"), {})
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    run_store.update_run(run.id, pid=int(gone.stdout))  # its process died before starting it
    assert [r.id for r in run_store.mark_stale_runs_crashed()] == [run.id]
    seen = {}

    def starting(compiled, inputs, *, run_id, **kw):  # what the resume's process sees while it starts the flow
        seen["crashed"] = [r.id for r in run_store.mark_stale_runs_crashed()]
        seen["run"] = run_store.get_run(run_id)
        return runs.RunResult(run_id, "completed", "done", {}, None)

    monkeypatch.setattr(lifecycle, "start", starting)
    runs.resume(run.id, catalog=Catalog.load())
    assert seen["crashed"] == [], "the run being resumed was marked crashed"
    assert (seen["run"].status, seen["run"].pid) == ("pending", os.getpid())


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="zombies are told apart through /proc")
def test_a_run_whose_process_is_a_zombie_is_found(store, definitions):
    """A killed process its parent has not reaped yet (a dashboard or webhook server starts runs
    and goes on; a container's first process may never reap) still has its pid, and executes
    nothing: its run is crashed."""
    import signal
    import time

    from flows import runs
    from flows.store import runs as run_store

    (definitions / "two_steps.yaml").write_text(TWO)
    run = runs.create(runs.compile_definition("two_steps"), {})
    child = subprocess.Popen(["sleep", "60"])
    try:
        os.kill(child.pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while open(f"/proc/{child.pid}/stat").read().rsplit(")", 1)[1].split()[0] != "Z":
            assert time.monotonic() < deadline
            time.sleep(0.01)
        run_store.update_run(run.id, pid=child.pid)
        assert [r.id for r in run_store.mark_stale_runs_crashed()] == [run.id], "a zombie taken for a live owner"
    finally:
        child.wait()


#: a run whose process dies as its flow body begins: Prefect made its flow run and set it
#: Running, and the flow body never wrote the flow run's id into the run
DIES_AS_THE_FLOW_BEGINS = textwrap.dedent("""
        import os
        from flows import runs
        from flows.catalog import Catalog
        from flows.execution import recorder

        def dies(*args, **kwargs):  # the kill lands as the flow body begins
            os._exit(9)

        recorder.StoreRecorder.open = dies
        catalog = Catalog.load()
        run = runs.create(runs.compile_definition("two_steps", catalog=catalog), {}, catalog=catalog)
        print(run.id, flush=True)
        runs.start(runs.compile_definition("two_steps", catalog=catalog), {}, catalog=catalog, run_id=run.id)
    """)


@pytest.mark.parametrize("killed", [1, 3])
def test_a_flow_run_whose_process_died_before_the_run_knew_it_is_crashed_too(prefect_api, store, definitions, killed):
    """A process killed after Prefect made the run's flow run (and set it Running) but before the
    flow body wrote its id into the run leaves a flow run the store cannot name: crash detection
    finds it by its name (the run's id) and marks it Crashed, so nothing in Prefect says it runs.
    Several such runs found by one command are each settled (Prefect is asked for all at once)."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterName

    from flows.store import runs as run_store

    (definitions / "two_steps.yaml").write_text(TWO)
    env = {**os.environ, "ERGON_DATABASE_URL": store, "ERGON_DEFINITIONS": str(definitions), "COLUMNS": "200"}
    run_ids = []
    for _ in range(killed):
        made = subprocess.run([sys.executable, "-c", DIES_AS_THE_FLOW_BEGINS], env=env, capture_output=True, text=True,
                              timeout=120)
        run_ids.append(made.stdout.strip().splitlines()[-1])
        assert run_store.get_run(run_ids[-1]).prefect_flow_run_id is None, "the flow body never recorded its flow run"
    listed = subprocess.run([*ERGON, "runs", "list", "--json"], env=env, capture_output=True, text=True, timeout=120)
    statuses = {r["run_id"]: r["status"] for r in json.loads(listed.stdout)["runs"] if r["run_id"] in run_ids}
    assert statuses == dict.fromkeys(run_ids, "crashed")
    with get_client(sync_client=True) as client:  # by name: the session's server holds every test's flow runs
        flow_runs = client.read_flow_runs(flow_run_filter=FlowRunFilter(name=FlowRunFilterName(any_=run_ids)))
    assert sorted((fr.name, fr.state.type.value) for fr in flow_runs) == sorted((r, "CRASHED") for r in run_ids), \
        [(fr.name, fr.state) for fr in flow_runs]


def test_a_flow_run_whose_process_died_as_prefect_made_it_is_crashed_too(prefect_api, store, definitions):
    """The narrowest window: the process is killed the moment Prefect has made the run's flow
    run (``Pending``), before its engine did anything else with it. Crash detection finds the flow
    run by its name, so the name must be the run's id from the moment it exists — not given later
    by a rename as the flow run starts (a resume killed there once left its flow run ``Pending``)."""
    from datetime import datetime, timezone

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowFilter, FlowFilterName

    (definitions / "made_then_killed.yaml").write_text(TWO.replace("two_steps", "made_then_killed"))
    env = {**os.environ, "ERGON_DATABASE_URL": store, "ERGON_DEFINITIONS": str(definitions), "COLUMNS": "200"}
    script = textwrap.dedent("""
        import os
        from prefect.client.orchestration import PrefectClient
        from flows import runs
        from flows.catalog import Catalog

        made = PrefectClient.create_flow_run

        async def made_then_killed(self, *args, **kwargs):
            await made(self, *args, **kwargs)
            os._exit(9)

        PrefectClient.create_flow_run = made_then_killed
        catalog = Catalog.load()
        compiled = runs.compile_definition("made_then_killed", catalog=catalog)
        run = runs.create(compiled, {}, catalog=catalog)
        print(run.id, flush=True)
        runs.start(compiled, {}, catalog=catalog, run_id=run.id)
    """)
    since = datetime.now(timezone.utc)
    made = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert made.returncode == 9, made.stderr[-2000:]
    run_id = made.stdout.strip().splitlines()[-1]

    def flow_runs() -> list:
        with get_client(sync_client=True) as client:
            rows = client.read_flow_runs(flow_filter=FlowFilter(name=FlowFilterName(any_=["made_then_killed"])),
                                         limit=200)
        return [fr for fr in rows if fr.created and fr.created >= since]

    assert [fr.state.type.value for fr in flow_runs()] == ["PENDING"], "the kill landed as Prefect made the flow run"
    listed = subprocess.run([*ERGON, "runs", "list", "--json"], env=env, capture_output=True, text=True, timeout=120)
    [row] = [r for r in json.loads(listed.stdout)["runs"] if r["run_id"] == run_id]
    assert row["status"] == "crashed"
    assert [(fr.name, fr.state.type.value) for fr in flow_runs()] == [(run_id, "CRASHED")]
