"""Starts that are not a terminal's ``ergon run`` go where Prefect puts them.

A deployed definition started in the background (the dashboard's start, a webhook, a chain, a
submission trigger, run-now, a replay, a resume — all :func:`flows.runs.start_background` or
:func:`flows.runs.resume_detached`) becomes a flow run of its deployment, run by a real
``prefect worker`` of the deployment's pool: no process is started on the host that asked, and
the run records the deployment, the work pool and the worker's flow-run process. An undeployed
definition, or one changed since it was deployed, starts as a local process, and the start says
which way it went and why.
"""

from __future__ import annotations

import os
import uuid

import pytest

from deploy_helpers import Worker, deploy, flow_run, wait_for
from testing_tools import marks

pytestmark = pytest.mark.prefect

GREET = """
format_version: 1
process: NAME
initial: a
context:
  schema:
    type: object
    properties:
      who: {type: string}
      note: {type: string}
      last: {type: string}
      attempts: {type: integer}
      failures: {type: integer}
    required: [who]
  initial: {note: plain, failures: 0}
nodes:
  a: {type: tool, tool: mark, input: {name: "a-{{ who }}"}, writes: [last], transitions: [{to: b}]}
  b: {type: tool, tool: flaky, input: {key: "{{ who }}", failures: "{{ failures }}"}, writes: [attempts],
      transitions: [{to: done}]}
  done: {type: final}
"""


@pytest.fixture
def greet(definitions) -> str:
    """A definition of this test's own name: the session's Prefect server keeps every test's deployments."""
    name = f"greet_{uuid.uuid4().hex[:8]}"
    (definitions / f"{name}.yaml").write_text(GREET.replace("NAME", name))
    return name


def _settled(run_id: str):
    from flows.store import runs as run_store

    def probe():
        run = run_store.get_run(run_id)
        return run if run is not None and run.status in ("completed", "failed", "crashed") else None

    return probe


def _final(flow_run_id):
    def probe():
        found = flow_run(flow_run_id)
        return found if found.state is not None and found.state.is_final() else None

    return probe


def _local_logs(run_id: str) -> list[str]:
    logs = os.path.join(os.environ["ERGON_HOME"], "logs")
    return [n for n in os.listdir(logs) if n.startswith(f"run-{run_id}")] if os.path.isdir(logs) else []


def test_a_background_start_of_a_deployed_definition_runs_on_a_worker_of_its_pool(deploy_env, greet, pool, tmp_path):
    from flows.runs import start_background
    from flows.store import runs as run_store

    deploy(greet, pool, deploy_env, tmp_path / "prefect.yaml")
    worker = Worker(pool, deploy_env, tmp_path / "worker.log").start()
    try:
        started = start_background(greet, {"who": "ada", "note": "from the dashboard"}, started_by="lea",
                                   trigger="webhook")
        assert (started.deployment, started.work_pool, started.pid) == (f"{greet}/{greet}", pool, None), started
        assert started.where == f"through deployment {greet}/{greet} (work pool {pool})"
        pending = run_store.require_run(started.run_id)
        assert pending.prefect_flow_run_id == started.flow_run_id and pending.pid is None, \
            "the run waits for a worker, owned by no process here"
        run = wait_for("the worker to run it", _settled(started.run_id), timeout=180, diagnose=worker.tail)
        # the flow run's end reaches Prefect just after Ergon's store records it: stop the worker after both
        prefect_run = wait_for("Prefect to record the flow run's end", _final(started.flow_run_id), timeout=60,
                               diagnose=worker.tail)
    finally:
        worker.stop()
    assert run.status == "completed", run.error
    assert run.trigger == "webhook" and run.started_by == "lea", "the starter and trigger recorded first are kept"
    assert run.context["note"] == "from the dashboard", "a value that is not a flow parameter still reaches it"
    assert (run.deployment, run.work_pool) == (f"{greet}/{greet}", pool)
    assert run.ran_pid not in (None, os.getpid()) and run.prefect_flow_run_id == started.flow_run_id
    assert prefect_run.name == run.id and prefect_run.state.is_completed() and prefect_run.deployment_id
    assert marks() == ["a-ada"]
    assert _local_logs(run.id) == [], "no process was started on the host that asked"


def test_an_undeployed_or_changed_definition_starts_here_and_says_why(deploy_env, definitions, greet, pool, tmp_path):
    from flows.runs import start_background

    here = start_background(greet, {"who": "bea"}, started_by="lea")
    assert here.deployment is None and here.pid and here.why_here is None
    assert wait_for("the local run", _settled(here.run_id), timeout=180).status == "completed"

    deploy(greet, pool, deploy_env, tmp_path / "prefect.yaml")
    path = definitions / f"{greet}.yaml"
    path.write_text(path.read_text().replace("initial: {note: plain, failures: 0}", "initial: {note: changed, failures: 0}"))
    changed = start_background(greet, {"who": "cy"}, started_by="lea")
    assert changed.deployment is None and changed.pid, changed
    assert f"ergon deploy {greet}" in changed.why_here and "other content" in changed.why_here
    assert changed.where.startswith("as a process on this host")
    assert wait_for("the local run", _settled(changed.run_id), timeout=180).context["note"] == "changed"


def test_a_resume_of_a_deployed_run_goes_through_its_deployment(deploy_env, greet, pool, tmp_path):
    from flows.runs import resume_detached, start_background
    from flows.store import visits as visit_store

    deploy(greet, pool, deploy_env, tmp_path / "prefect.yaml")
    worker = Worker(pool, deploy_env, tmp_path / "worker.log").start()
    try:
        started = start_background(greet, {"who": "flaky", "failures": 1}, started_by="lea")
        failed = wait_for("the run to fail once", _settled(started.run_id), timeout=180, diagnose=worker.tail)
        assert failed.status == "failed", failed.error
        resumed = resume_detached(failed, "lea")
        assert (resumed.deployment, resumed.work_pool, resumed.pid) == (f"{greet}/{greet}", pool, None), resumed
        assert resumed.flow_run_id != started.flow_run_id, "a new flow run of the deployment"
        done = wait_for("the resumed run to complete", lambda: (r := _settled(started.run_id)()) and
                        r.status == "completed" and r, timeout=180, diagnose=worker.tail)
    finally:
        worker.stop()
    assert done.context["attempts"] == 2
    assert marks() == ["a-flaky"], "the completed visit was not executed again"
    assert [v.node_id for v in visit_store.visits_for_run(done.id) if v.status == "completed"] == ["a", "b", "done"]
    assert _local_logs(done.id) == []


def test_a_run_its_flow_run_never_took_up_is_found_crashed_and_resumes(deploy_env, greet, pool, tmp_path,
                                                                        monkeypatch):
    """A worker killed while its flow-run process started, or a server restart refusing that
    process's first call, leaves the run pending with no process: crash detection asks Prefect."""
    from prefect.client.orchestration import get_client
    from prefect.states import Crashed, Running

    import flows.settings
    from flows import runs
    from flows.runs import resume_detached, start_background
    from flows.store import runs as run_store

    deploy(greet, pool, deploy_env, tmp_path / "prefect.yaml")
    waiting = start_background(greet, {"who": "dee"}, started_by="lea")  # no worker yet: it waits, Scheduled
    ended = start_background(greet, {"who": "eve"}, started_by="lea")
    stuck = start_background(greet, {"who": "fay"}, started_by="lea")
    with get_client(sync_client=True) as client:
        client.set_flow_run_state(ended.flow_run_id, Crashed(message="the process's first call was refused"), force=True)
        client.set_flow_run_state(stuck.flow_run_id, Running(), force=True)
    assert {r.id for r in runs.detect_crashed()} == {ended.run_id}, "a flow run that ended first loses its run"
    monkeypatch.setattr(flows.settings, "TAKE_UP_TIMEOUT_SECONDS", 0)
    assert {r.id for r in runs.detect_crashed()} == {stuck.run_id}, "so does one running with nothing taking it up"
    assert run_store.require_run(waiting.run_id).status == "pending", "a flow run waiting for a worker is not lost"
    lost = run_store.require_run(ended.run_id)
    assert lost.status == "crashed" and "ended Crashed before a flow body took the run up" in lost.error
    assert "no flow body took the run up" in run_store.require_run(stuck.run_id).error
    assert flow_run(stuck.flow_run_id).state.type.value == "CRASHED", "Prefect is told too"

    worker = Worker(pool, deploy_env, tmp_path / "worker.log").start()
    try:
        resumed = resume_detached(lost, "lea")
        assert resumed.deployment == f"{greet}/{greet}"
        for run_id in (ended.run_id, waiting.run_id):
            run = wait_for("the run to complete", _settled(run_id), timeout=180, diagnose=worker.tail)
            assert run.status == "completed", run.error
    finally:
        worker.stop()
