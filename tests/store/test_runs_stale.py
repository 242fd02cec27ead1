"""mark_stale_runs_crashed: runs left `running` by a dead process are found and marked."""

from __future__ import annotations

import socket
import subprocess
import sys
from datetime import UTC, datetime, timedelta

from flows.store import runs as run_store
from flows.store import visits as visit_store

T0 = datetime(2025, 1, 1, tzinfo=UTC)


def _running(now, **kw):
    run = run_store.create_run("d")
    return run_store.set_run_status(run.id, "running", now=now, **kw)


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_run_without_recent_heartbeat_is_crashed(store):
    old = _running(T0)
    fresh = _running(T0 + timedelta(minutes=9))
    run_store.heartbeat(old.id, now=T0 + timedelta(minutes=1))
    crashed = run_store.mark_stale_runs_crashed(now=T0 + timedelta(minutes=10), heartbeat_timeout=timedelta(minutes=5))
    assert [r.id for r in crashed] == [old.id]
    got = run_store.get_run(old.id)
    assert got.status == "crashed" and "no heartbeat since 2025-01-01T00:01:00" in got.error
    assert got.ended_at == T0 + timedelta(minutes=10)
    assert run_store.get_run(fresh.id).status == "running"


def test_a_run_whose_process_died_on_this_host_is_crashed_at_once(store):
    now = datetime.now(UTC)
    dead = _running(now, pid=_dead_pid())
    alive = _running(now)  # this process
    elsewhere = _running(now, pid=_dead_pid(), host="some-other-host")  # cannot check its pid
    crashed = run_store.mark_stale_runs_crashed(now=now, heartbeat_timeout=300)
    assert [r.id for r in crashed] == [dead.id]
    assert f"process {dead.pid} on {socket.gethostname()} is gone" in run_store.get_run(dead.id).error
    assert run_store.get_run(alive.id).status == "running"
    assert run_store.get_run(elsewhere.id).status == "running"


def test_running_visits_of_a_crashed_run_fail_and_others_are_untouched(store):
    run = _running(T0)
    done = visit_store.finish_visit(visit_store.start_visit(run.id, "a", "tool").id)
    open_visit = visit_store.start_visit(run.id, "b", "agent")
    paused = run_store.set_run_status(run_store.create_run("d").id, "paused")
    finished = _running(T0)
    run_store.set_run_status(finished.id, "completed")
    crashed = run_store.mark_stale_runs_crashed(now=T0 + timedelta(hours=1), heartbeat_timeout=60)
    assert [r.id for r in crashed] == [run.id]
    visits = {v.id: v for v in visit_store.visits_for_run(run.id)}
    assert visits[done.id].status == "completed"
    assert visits[open_visit.id].status == "failed" and visits[open_visit.id].error.startswith("crashed")
    assert run_store.get_run(paused.id).status == "paused" and run_store.get_run(finished.id).status == "completed"
    # A crashed run can be resumed.
    assert run_store.set_run_status(run.id, "running").status == "running"
    assert run_store.mark_stale_runs_crashed(now=datetime.now(UTC)) == []
