"""A task is answerable only while its run can take the answer.

A real `ergon run` waits at a human task and is then stopped with a real signal:

* SIGTERM or SIGKILL — the process is gone, the run can resume: the dashboard's inbox and
  `ergon tasks show` say that the run stopped while it waited, and an answer (CLI or dashboard)
  is kept and resumes the run from its checkpoint: the node before the task is not run again,
  no second task is asked, the run completes with the answer. Prefect's flow run of the dead
  process is no longer ``Paused`` (its own resume form would accept an answer nobody executes).
* Ctrl-C (SIGINT) — a person stopped it: the run is cancelled, its task closes on the spot with
  the reason, and an answer is refused with that reason, nothing recorded.
"""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import pytest

from test_pause_resume import ERGON, cli, review, start, wait_for_task

pytestmark = pytest.mark.prefect

APP = Path(__file__).resolve().parents[2] / "ui" / "app.py"


def _prefect_state(flow_run_id: str) -> str:
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        return client.read_flow_run(flow_run_id).state.type.value


def _wait_paused_in_prefect(flow_run_id: str, timeout: float = 60) -> None:
    """Kill the process only once Prefect has it paused (the task row comes a moment earlier)."""
    deadline = time.monotonic() + timeout
    while _prefect_state(flow_run_id) != "PAUSED":
        assert time.monotonic() < deadline, "the run never paused in Prefect"
        time.sleep(0.2)


def _wait_status(run_id: str, statuses: tuple[str, ...], timeout: float = 120) -> str:
    from flows.store import runs as run_store

    deadline = time.monotonic() + timeout
    while (status := run_store.run_status(run_id)) not in statuses:
        assert time.monotonic() < deadline, f"run {run_id} is still {status}"
        time.sleep(0.3)
    return status


def _stopped_run(name: str, env: dict, definitions: Path, sig: signal.Signals, tokens):
    """A real `ergon run` of a review, waiting at its task, then stopped with ``sig``: (task, flow run id)."""
    from flows.store import runs as run_store

    (definitions / f"{name}.yaml").write_text(review(name))
    assert cli(["users", "add", "alice", "--group", "legal", "--token", tokens.admin], env).returncode == 0
    proc = start(name, env)
    try:
        task = wait_for_task(name)
        flow_run_id = run_store.get_run(task.run_id).prefect_flow_run_id
        _wait_paused_in_prefect(flow_run_id)
        proc.send_signal(sig)
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    return task, flow_run_id


def _inbox(task_id: str):
    """The dashboard's inbox on ``task_id``, signed in as alice (AppTest, this test's store)."""
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    st.cache_resource.clear()
    from ui import auth, session

    at = AppTest.from_file(str(APP), default_timeout=60)
    at.session_state[auth.TEST_TOKEN_KEY] = session.issue("alice")[0]  # what the sign-in cookie holds
    at.query_params["task"] = task_id
    at.run()
    at.switch_page("pages/inbox.py").run()
    assert not at.exception, at.exception
    return at


def _finishes_from_its_checkpoint(task, old_flow_run_id: str) -> None:
    from flows.store import runs as run_store
    from flows.store import tasks as task_store
    from flows.store import visits as visit_store

    assert _wait_status(task.run_id, ("completed", "failed", "cancelled")) == "completed"
    run = run_store.get_run(task.run_id)
    assert run.outcome == "done" and run.context["decision"] == "approve"
    visits = [(v.node_id, v.status) for v in visit_store.visits_for_run(run.id)]
    assert [n for n, _ in visits] == ["prepare", "review", "review", "done"], visits
    assert visits[1][1] != "completed" and visits[2][1] == "completed", "the interrupted visit, then the resumed one"
    assert run.context["counter"] == 1, "`prepare` (before the task) was not run again"
    tasks = task_store.tasks_for_run(run.id)
    assert [t.id for t in tasks] == [task.id], "no second task: the resumed visit took the answered one"
    assert tasks[0].status == "completed" and tasks[0].answered_by == "alice"
    assert run.prefect_flow_run_id != old_flow_run_id, "the resume ran in a new flow run"
    assert _prefect_state(old_flow_run_id) == "CRASHED", "the dead process's flow run is not left Paused"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_answering_a_task_of_a_killed_run_resumes_it_from_its_checkpoint(env, definitions, sig, tokens):
    from flows.store import runs as run_store
    from flows.store import tasks as task_store

    task, flow_run_id = _stopped_run(f"killed_{sig.name.lower()}", env, definitions, sig, tokens)

    shown = cli(["tasks", "show", task.id, "--token", tokens["alice"]], env)
    assert shown.returncode == 0, shown.stderr
    assert "stopped while it waited" in shown.stdout and "resumes from its checkpoint" in shown.stdout
    assert run_store.get_run(task.run_id).status == "crashed", "the dead process was found"
    assert task_store.get_task(task.id).status == "pending"

    at = _inbox(task.id)
    warnings = [w.value for w in at.warning]
    assert any("The run stopped while it waited" in w for w in warnings), warnings
    assert any(b.label == "Submit answer" for b in at.button), "it can still be answered: the run can take it"

    answered = cli(["tasks", "answer", task.id, "--set", "decision=approve", "--token", tokens["alice"]], env)
    assert answered.returncode == 0, answered.stdout + answered.stderr
    assert "resumes from its checkpoint with this answer" in answered.stdout
    _finishes_from_its_checkpoint(task, flow_run_id)


def test_the_dashboard_answer_resumes_a_killed_run_too(env, definitions, tokens):
    task, flow_run_id = _stopped_run("killed_dashboard", env, definitions, signal.SIGKILL, tokens)
    at = _inbox(task.id)
    at.selectbox(key=f"field:{task.id}:decision").set_value("approve")
    next(b for b in at.button if b.label == "Submit answer").click().run()
    assert any("resumes from its checkpoint" in s.value for s in at.success), [s.value for s in at.success]
    _finishes_from_its_checkpoint(task, flow_run_id)


def test_a_task_of_a_run_stopped_with_ctrl_c_closes_and_refuses_answers(env, definitions, tokens):
    from flows.store import runs as run_store
    from flows.store import tasks as task_store

    task, _ = _stopped_run("interrupted", env, definitions, signal.SIGINT, tokens)
    run = run_store.get_run(task.run_id)
    assert run.status == "cancelled"
    closed = task_store.get_task(task.id)
    assert closed.status == "cancelled", "the task closed when its run ended"
    reasons = [e.detail.get("reason") for e in task_store.task_events(task.id) if e.action == "cancelled"]
    assert reasons and "the run ended cancelled" in reasons[0]

    at = _inbox(task.id)
    assert not any(b.label == "Submit answer" for b in at.button), "no form for a task nothing can take"

    refused = cli(["tasks", "answer", task.id, "--set", "decision=approve", "--token", tokens["alice"]], env)
    assert refused.returncode == 1
    assert f"task {task.id} cannot be answered: its run {task.run_id} ended cancelled" in refused.stderr, \
        refused.stderr
    after = task_store.get_task(task.id)
    assert after.answer in (None, {}) and after.answered_by is None, "nothing recorded"
    assert run_store.get_run(task.run_id).status == "cancelled"


def test_two_parallel_tasks_of_a_killed_run_resume_it_once(env, definitions):
    """A pipeline whose two parallel tasks wait in subflows of their own; its process is killed.
    The first answer resumes the run from its checkpoint; the second reaches the resumed run
    (its task re-entered, in a new subflow); both tasks are used, none asked twice."""
    from test_parallel_tasks import APPROVALS

    from flows.store import runs as run_store
    from flows.store import tasks as task_store

    (definitions / "two_approvals.yaml").write_text(APPROVALS)
    proc = start("two_approvals", env)
    try:
        deadline = time.monotonic() + 120
        while True:
            rows, _ = task_store.list_tasks(status="pending")
            tasks = [t for t in rows if run_store.get_run(t.run_id).definition_name == "two_approvals"]
            if len(tasks) == 2 and all(t.prefect_flow_run_id for t in map(task_store.get_task, [t.id for t in tasks])):
                break
            assert time.monotonic() < deadline, "the two tasks never waited"
            time.sleep(0.3)
        for t in tasks:
            _wait_paused_in_prefect(task_store.get_task(t.id).prefect_flow_run_id)
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    by_node = {t.node_id: t for t in tasks}
    first = cli(["tasks", "answer", by_node["legal"].id, "--set", "legal_ok=yes"], env)
    assert first.returncode == 0 and "resumes from its checkpoint" in first.stdout, first.stdout + first.stderr
    second = cli(["tasks", "answer", by_node["finance"].id, "--set", "finance_ok=no"], env)
    assert second.returncode == 0, second.stdout + second.stderr
    run_id = tasks[0].run_id
    assert _wait_status(run_id, ("completed", "failed", "cancelled")) == "completed", run_store.get_run(run_id).error
    assert run_store.get_run(run_id).context["summary"] == "legal=yes finance=no"
    assert sorted(t.id for t in task_store.tasks_for_run(run_id)) == sorted(t.id for t in tasks), "none asked twice"


def test_an_answer_the_killed_process_never_took_is_kept(env, definitions, tokens):
    """The answer reaches the waiting flow run, and the process is killed before it takes it (it
    polls Prefect once a second; here it is frozen with SIGSTOP, answered, then killed). The
    answer is recorded on the task and the visit never completed: resuming the run goes on with
    that answer — no second task, the person is not asked again."""
    from flows.store import runs as run_store
    from flows.store import tasks as task_store

    name = "killed_after_answer"
    (definitions / f"{name}.yaml").write_text(review(name))
    assert cli(["users", "add", "alice", "--group", "legal", "--token", tokens.admin], env).returncode == 0
    proc = start(name, env)
    try:
        task = wait_for_task(name)
        flow_run_id = run_store.get_run(task.run_id).prefect_flow_run_id
        _wait_paused_in_prefect(flow_run_id)
        proc.send_signal(signal.SIGSTOP)
        answered = cli(["tasks", "answer", task.id, "--set", "decision=approve", "--token", tokens["alice"]], env)
        assert answered.returncode == 0, answered.stdout + answered.stderr
        assert _prefect_state(flow_run_id) != "PAUSED", "Prefect took the answer"
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert cli(["runs", "list"], env).returncode == 0
    assert run_store.get_run(task.run_id).status == "crashed"
    resumed = subprocess.Popen([*ERGON, "runs", "resume", task.run_id], env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while (status := run_store.run_status(task.run_id)) not in ("completed", "failed", "cancelled") \
                and len(task_store.tasks_for_run(task.run_id)) == 1:
            assert time.monotonic() < deadline, f"run {task.run_id} is still {status}"
            time.sleep(0.3)
        assert [t.id for t in task_store.tasks_for_run(task.run_id)] == [task.id], "the person was asked again"
        assert status == "completed", run_store.get_run(task.run_id).error
    finally:
        if resumed.poll() is None:
            resumed.kill()
        resumed.communicate(timeout=60)
    run = run_store.get_run(task.run_id)
    assert run.context["decision"] == "approve" and run.context["counter"] == 1


def test_a_task_flow_run_the_killed_process_never_recorded_is_crashed_too(env, definitions):
    """Two parallel tasks wait in subflows of their own; the process is killed the moment Prefect
    made the first one, before its task could record it. Crash detection ends it with the run's
    flow run: no flow run of the dead process stays ``Pending`` in Prefect."""
    import json
    import sys
    import textwrap
    from datetime import datetime, timezone

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowFilter, FlowFilterName
    from test_parallel_tasks import APPROVALS

    from flows.store import runs as run_store

    (definitions / "two_approvals.yaml").write_text(APPROVALS)
    script = textwrap.dedent("""
        import os
        from prefect.client.orchestration import PrefectClient
        from flows import runs
        from flows.catalog import Catalog

        made = PrefectClient.create_flow_run

        async def killed_as_a_task_waits(self, flow, *args, **kwargs):
            created = await made(self, flow, *args, **kwargs)
            if flow.name == "ergon-human-task":
                os._exit(9)
            return created

        PrefectClient.create_flow_run = killed_as_a_task_waits
        catalog = Catalog.load()
        compiled = runs.compile_definition("two_approvals", catalog=catalog)
        run = runs.create(compiled, {"party": "ACME"}, catalog=catalog)
        print(run.id, flush=True)
        runs.start(compiled, {"party": "ACME"}, catalog=catalog, run_id=run.id)
    """)
    since = datetime.now(timezone.utc)
    killed = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert killed.returncode == 9, killed.stderr[-2000:]
    run_id = killed.stdout.strip().splitlines()[-1]

    def flow_runs() -> dict[str, str]:
        """The states of the run's flow run and its task's, by name."""
        with get_client(sync_client=True) as client:
            rows = client.read_flow_runs(
                flow_filter=FlowFilter(name=FlowFilterName(any_=["two_approvals", "ergon-human-task"])), limit=200)
        return {fr.name: fr.state.type.value for fr in rows if fr.created and fr.created >= since}

    assert sorted(flow_runs().values()) == ["PENDING", "RUNNING"], "the kill landed as the task's flow run was made"
    listed = cli(["runs", "list", "--json"], env)
    assert [r["status"] for r in json.loads(listed.stdout)["runs"] if r["run_id"] == run_id] == ["crashed"]
    assert run_store.get_run(run_id).prefect_flow_run_id, "the run recorded its own flow run"
    assert sorted(flow_runs().values()) == ["CRASHED", "CRASHED"], flow_runs()
