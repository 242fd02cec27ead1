"""The same definitions on a Prefect server backed by PostgreSQL, with a process worker, and
Ergon's store on PostgreSQL (scale-out): a scheduled run, a human task answered while
the worker is stopped (the run suspends, resumes after the restart and completes without
repeating a visit), and 20 runs at once with no lost records.

Needs ``ERGON_TEST_POSTGRES_URL`` (``python3 dev.py test`` starts a throwaway cluster on loopback
and sets it); the test creates a database for Prefect and one for Ergon's store on that server.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "deploy"))
from deploy_helpers import Worker, cli, wait_for  # noqa: E402
from testing_tools import marks  # noqa: E402

URL = os.environ.get("ERGON_TEST_POSTGRES_URL")
pytestmark = [
    pytest.mark.postgres,
    pytest.mark.prefect,
    pytest.mark.skipif(not URL, reason="needs PostgreSQL: set ERGON_TEST_POSTGRES_URL=postgresql+psycopg://user@host:port/db "
                                       "(`python3 dev.py test` starts one when PostgreSQL is installed)"),
]

TICKER = """
format_version: 1
process: ticker
initial: count
context:
  schema:
    type: object
    properties:
      n: {type: integer}
      counter: {type: integer}
  initial: {n: 0}
triggers:
  - {type: interval, every: 20s, input: {n: -1}}
nodes:
  count: {type: tool, tool: increment, input: {value: "{{ n }}"}, writes: [counter], transitions: [{to: done}]}
  done: {type: final}
"""

APPROVAL = """
format_version: 1
process: approval
initial: a
context:
  schema:
    type: object
    properties:
      last: {type: string}
      decision: {type: string}
nodes:
  a: {type: tool, tool: mark, input: {name: a}, writes: [last], transitions: [{to: review}]}
  review:
    type: human_task
    task:
      title: Approve
      fields: [{name: decision, type: select, required: true, options: [approve, reject]}]
    writes: [decision]
    transitions: [{to: c}]
  c: {type: tool, tool: mark, input: {name: c}, writes: [last], transitions: [{to: done}]}
  done: {type: final}
"""


def _create_database(name: str) -> str:
    """A new database on the test server; its SQLAlchemy URL (psycopg driver)."""
    import psycopg

    base = URL.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f'create database "{name}"')
    return URL.rsplit("/", 1)[0] + f"/{name}"


@pytest.fixture
def cluster(tmp_path, definitions, monkeypatch):
    """A Prefect server on PostgreSQL and an Ergon store on PostgreSQL; yields the shared env."""
    from flows.prefect import server
    from flows.store import db

    suffix = uuid.uuid4().hex[:8]
    prefect_db = _create_database(f"prefect_{suffix}").replace("postgresql+psycopg://", "postgresql+asyncpg://")
    store_db = _create_database(f"ergon_{suffix}")
    port = server._free_port(0)
    api = f"http://127.0.0.1:{port}/api"
    server_env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    server_env.update({"PREFECT_HOME": str(tmp_path / "prefect"), "PREFECT_API_DATABASE_CONNECTION_URL": prefect_db,
                       "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "PREFECT_UI_ENABLED": "false"})
    log = open(tmp_path / "server.log", "ab")
    proc = subprocess.Popen([sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1", "--port",
                             str(port)], env=server_env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_for("the PostgreSQL-backed Prefect server", lambda: server.healthy(api), timeout=180,
                 diagnose=lambda: (tmp_path / "server.log").read_text()[-3000:])
        monkeypatch.setenv("ERGON_DATABASE_URL", store_db)
        db.init_db(store_db)  # migrate once, before several processes open the store
        env = {**os.environ, "PREFECT_API_URL": api, "ERGON_DATABASE_URL": store_db,
               "ERGON_DEFINITIONS": str(definitions), "COLUMNS": "200"}
        from prefect.settings import PREFECT_API_URL, temporary_settings

        with temporary_settings(updates={PREFECT_API_URL: api}):
            yield env
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        db.dispose_all()


def _state(flow_run_id) -> object:
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        return client.read_flow_run(flow_run_id).state


def test_definitions_run_unchanged_on_a_postgres_cluster_with_a_worker(cluster, definitions, tmp_path):
    from prefect.deployments import run_deployment

    from flows import people
    from flows import tokens as token_auth
    from flows.store import runs as run_store
    from flows.store import tasks as task_store
    from flows.store import visits as visit_store

    env = cluster
    (definitions / "ticker.yaml").write_text(TICKER)
    (definitions / "approval.yaml").write_text(APPROVAL)
    deployed = cli(["deploy", "ticker", "approval", "--work-pool", "cluster",
                    "--prefect-file", str(tmp_path / "prefect.yaml")], env)
    assert deployed.returncode == 0, deployed.stdout + deployed.stderr
    worker = Worker("cluster", env, tmp_path / "worker.log", limit=10).start()
    try:
        # 1. the interval schedule starts a run by itself, acting as a scheduled run
        scheduled = wait_for("a scheduled run to complete", lambda: [
            r for r in run_store.list_runs(definition="ticker")[0] if r.trigger == "schedule" and r.status == "completed"],
            timeout=180, every=1, diagnose=worker.tail)[0]
        assert scheduled.context["counter"] == 0, "the trigger's input (n=-1) reached the run"

        # 2. a human task: the run suspends; answered while no worker runs; resumed after the restart
        approval = run_deployment("approval/approval", parameters={}, timeout=0)
        run = wait_for("the approval run to suspend", lambda: (
            (r := run_store.get_run_by_prefect_id(str(approval.id))) is not None and r.status == "paused"
            and _state(approval.id).name == "Suspended" and r), timeout=180, diagnose=worker.tail)
        worker.stop()
        [task] = task_store.tasks_for_run(run.id)
        people.add_user("ops")
        ops = token_auth.create("ops").token  # in the cluster's store
        answered = cli(["tasks", "answer", task.id, "--set", "decision=approve", "--token", ops], env)
        assert answered.returncode == 0, answered.stdout + answered.stderr
        assert wait_for("Prefect to reschedule the resumed run", lambda: _state(approval.id).is_scheduled())
        assert run_store.get_run(run.id).status == "paused", "nothing runs it while the worker is stopped"
        worker.start()
        done = wait_for("the approval run to complete", lambda: (
            (r := run_store.get_run(run.id)).status in ("completed", "failed", "crashed") and r), timeout=180,
            diagnose=worker.tail)
        assert done.status == "completed" and done.context["decision"] == "approve", done.error
        assert marks() == ["a", "c"], "no completed visit ran twice"
        assert [(v.node_id, v.status) for v in visit_store.visits_for_run(run.id)] == [
            ("a", "completed"), ("review", "paused"), ("review", "completed"), ("c", "completed"), ("done", "completed")]

        # 3. twenty runs at once: every run and every visit in the store, states agreeing with Prefect's
        started = [run_deployment("ticker/ticker", parameters={"n": i}, timeout=0) for i in range(20)]
        ids = {str(fr.id): i for i, fr in enumerate(started)}
        finals = wait_for("20 flow runs to finish", lambda: (
            (states := {fid: _state(fid) for fid in ids}) and all(s.is_final() for s in states.values()) and states),
            timeout=400, every=2, diagnose=worker.tail)
    finally:
        worker.stop()
    assert all(s.is_completed() for s in finals.values()), {k: s.name for k, s in finals.items() if not s.is_completed()}
    for fid, i in ids.items():
        run = run_store.get_run_by_prefect_id(fid)
        assert run is not None, f"flow run {fid} has no Ergon run"
        assert run.status == "completed" and run.context["counter"] == i + 1 and run.trigger == "api"
        assert [(v.node_id, v.status) for v in visit_store.visits_for_run(run.id)] == [("count", "completed"),
                                                                                       ("done", "completed")]
