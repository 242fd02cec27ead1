"""What Ergon logs lands where a Prefect user looks: the flow run's logs (Prefect's API, its UI's
log tab, ``prefect flow-run logs``) and a worker's console — node starts and ends, the ``log``
tool's messages at their level, a retry as a warning — and a run waiting for a person is logged
as waiting (INFO), never as an error."""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "deploy"))
from deploy_helpers import Worker, cli, deploy, flow_run, run_in, start_deployment, wait_for  # noqa: E402

pytestmark = pytest.mark.prefect

LOGGED = """
format_version: 1
process: logged
initial: say
context:
  schema:
    type: object
    properties:
      attempts: {type: integer}
nodes:
  say:
    type: tool
    tool: log
    input: {message: "hello from the log tool"}
    transitions: [{to: warn}]
  warn:
    type: tool
    tool: log
    input: {message: "the ledger looks odd", level: warning}
    transitions: [{to: fetch}]
  fetch:
    type: tool
    tool: flaky
    input: {key: logs, failures: 1}
    writes: [attempts]
    retry: {retries: 2, delay_seconds: 0.05}
    transitions: [{to: done}]
  done: {type: final}
"""


def _api_logs(flow_run_id: str) -> list[Any]:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import LogFilter, LogFilterFlowRunId
    from prefect.client.schemas.sorting import LogSort

    with get_client(sync_client=True) as client:
        return client.read_logs(log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=[uuid.UUID(flow_run_id)])),
                                sort=LogSort.TIMESTAMP_ASC)


def _has(logs: list[Any], level: int, pattern: str) -> bool:
    return any(log.level == level and re.search(pattern, log.message) for log in logs)


def _listing(logs: list[Any]) -> str:
    return "\n".join(f"{logging.getLevelName(log.level):8} {log.name}: {log.message}" for log in logs)


def test_node_lines_tool_messages_and_retries_reach_the_flow_runs_logs(run_def):
    from prefect.logging.handlers import APILogWorker

    from flows.store import runs as run_store

    result = run_def({"logged.yaml": LOGGED}, "logged")
    assert result["status"] == "completed", result
    flow_run_id = run_store.require_run(result["run_id"]).prefect_flow_run_id
    assert flow_run_id
    APILogWorker.drain_all(timeout=10)  # Prefect's log worker sends in batches: send what is queued now

    def complete() -> list[Any] | None:
        logs = _api_logs(flow_run_id)
        return logs if _has(logs, logging.INFO, r"Node 'done'") else None

    logs = wait_for("the run's logs to reach Prefect", complete, timeout=30, every=0.5)
    listing = _listing(logs)
    assert _has(logs, logging.INFO, r"^Node 'say' started$"), listing
    assert _has(logs, logging.INFO, r"^Node 'say' completed in [\d.]+ ms → 'warn'$"), listing
    assert _has(logs, logging.INFO, r"^hello from the log tool$"), listing
    assert _has(logs, logging.WARNING, r"^the ledger looks odd$"), listing
    assert _has(logs, logging.WARNING, r"^Node 'fetch' attempt 1 of 3 failed, it is retried: .*flaky failure 1 of 1"), listing
    assert _has(logs, logging.WARNING, r"^Node 'fetch' retried: attempt 2 of 3$"), listing
    assert _has(logs, logging.INFO, r"^Node 'fetch' completed in [\d.]+ ms → 'done'$"), listing
    assert not any(log.level >= logging.ERROR and "Node" in log.message for log in logs), \
        "an attempt that is retried is not an error:\n" + listing
    said = next(log for log in logs if log.message == "hello from the log tool")
    assert said.name == "ergon.tools" and said.task_run_id is not None, "a tool's line belongs to its node's task run"
    started = next(log for log in logs if log.message == "Node 'say' started")
    assert started.name == "ergon.nodes" and started.task_run_id == said.task_run_id, "so does the node's own line"

    shown = subprocess.run([sys.executable, "-m", "prefect", "flow-run", "logs", flow_run_id], env={**os.environ, "COLUMNS": "300"},
                           capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0, shown.stdout + shown.stderr
    text = shown.stdout
    assert re.search(r"\| INFO\s+\| .*Node 'say' started", text), text
    assert re.search(r"\| INFO\s+\| .*hello from the log tool", text), text
    assert re.search(r"\| WARNING \| .*the ledger looks odd", text), text
    assert re.search(r"\| WARNING \| .*Node 'fetch' retried: attempt 2 of 3", text), text


APPROVAL = """
format_version: 1
process: approval
initial: a
context:
  schema:
    type: object
    properties:
      party: {type: string}
      last: {type: string}
      decision: {type: string}
    required: [party]
nodes:
  a: {type: tool, tool: mark, input: {name: a}, writes: [last], transitions: [{to: review}]}
  review:
    type: human_task
    task:
      title: "Approve {{ party }}"
      fields:
        - {name: decision, type: select, required: true, options: [approve, reject]}
    writes: [decision]
    transitions: [{to: c}]
  c: {type: tool, tool: mark, input: {name: c}, writes: [last], transitions: [{to: done}]}
  done: {type: final}
"""

_ERROR_LINE = re.compile(r"\|\s*(ERROR|CRITICAL)\s*\|")


def test_a_run_waiting_for_a_person_is_logged_as_waiting_not_as_an_error(prefect_api, store, definitions, tmp_path,
                                                                         tokens):
    from flows.store import runs as run_store
    from flows.store import tasks as task_store

    env = {**os.environ, "ERGON_DATABASE_URL": store, "ERGON_DEFINITIONS": str(definitions), "COLUMNS": "200"}
    pool = f"ergon-test-{uuid.uuid4().hex[:8]}"
    (definitions / "approval.yaml").write_text(APPROVAL)
    deploy("approval", pool, env, tmp_path / "prefect.yaml")
    log_file = tmp_path / "worker.log"
    worker = Worker(pool, env, log_file).start()  # its console shows INFO (see Worker.start)
    try:
        prefect_run = start_deployment("approval/approval", {"party": "ACME"})
        flow_run_id = str(prefect_run.id)
        run = wait_for("the run to pause on its task", run_in(prefect_run.id, "paused"), diagnose=worker.tail)
        wait_for("Prefect to show the run suspended", lambda: flow_run(prefect_run.id).state.name == "Suspended",
                 diagnose=worker.tail)
        [task] = task_store.tasks_for_run(run.id)
        waiting = rf"Node 'review' waits for a person: Approve ACME \(task {task.id}\)"
        # the flow-run process logs its end after Prefect shows the suspension, then exits
        wait_for("the suspended run's process to log its end", lambda: re.search(
            r"Flow run .* - Finished in state Suspended", log_file.read_text(errors="replace")), timeout=60,
            diagnose=worker.tail)
        console = log_file.read_text(errors="replace")
        assert re.search(r"\| INFO\s+\| .*" + waiting, console), console
        assert re.search(r"\| INFO\s+\| Flow run .* - Finished in state Suspended", console), console
        errors = [line for line in console.splitlines() if _ERROR_LINE.search(line)]
        assert not errors, "the wait was logged as an error on the worker's console:\n" + "\n".join(errors)

        def logged_suspension() -> list[Any] | None:
            logs = _api_logs(flow_run_id)
            return logs if _has(logs, logging.INFO, r"^Finished in state Suspended") else None

        logs = wait_for("the suspension to reach the flow run's logs", logged_suspension, timeout=30, every=0.5)
        assert _has(logs, logging.INFO, "^" + waiting + "$"), _listing(logs)
        assert not [log for log in logs if log.level >= logging.ERROR], \
            "the wait was logged as an error in the flow run's logs:\n" + _listing(logs)

        answered = cli(["tasks", "answer", task.id, "--set", "decision=approve", "--token", tokens["lea"]], env)
        assert answered.returncode == 0, answered.stdout + answered.stderr
        done = wait_for("the resumed run to complete", lambda: (
            (r := run_store.get_run(run.id)).status in ("completed", "failed", "crashed") and r), diagnose=worker.tail)
        assert done.status == "completed" and done.outcome == "done", done.error
        assert wait_for("Prefect to complete the flow run", lambda: flow_run(prefect_run.id).state.is_completed(),
                        diagnose=worker.tail)
    finally:
        worker.stop()


def test_only_the_end_of_a_wait_is_made_info():
    """The filter downgrades Prefect's "Finished in state Paused/Suspended" records, and
    "Finished in state Running()" of a task run only in a flow run that waits for a person;
    every other record keeps its level."""
    from flows.prefect import logs

    waiting, busy = str(uuid.uuid4()), str(uuid.uuid4())
    logs._WAITING.add(waiting)
    try:
        def level(name: str, message: str, flow_run_id: str, levelno: int = logging.ERROR) -> str:
            record = logging.LogRecord(name, levelno, __file__, 1, message, None, None)
            record.flow_run_id = flow_run_id
            assert logs.WaitingIsNotAnError().filter(record)
            return record.levelname

        assert level("prefect.flow_runs", "Finished in state Suspended(type=PAUSED)", busy) == "INFO"
        assert level("prefect.flow_runs", "Finished in state Paused(message='x', type=PAUSED)", busy) == "INFO"
        assert level("prefect.task_runs", "Finished in state Running()", waiting) == "INFO"
        assert level("prefect.task_runs", "Finished in state Running()", busy) == "ERROR"
        assert level("prefect.flow_runs", "Finished in state Failed('boom')", waiting) == "ERROR"
        assert level("prefect.task_runs", "Finished in state Crashed('killed')", waiting) == "ERROR"
        assert level("prefect.task_runs", "Task run failed with exception: ValueError('x')", waiting) == "ERROR"
        assert level("prefect.flow_runs", "Finished in state Suspended(type=PAUSED)", busy, logging.INFO) == "INFO"
    finally:
        logs._WAITING.discard(waiting)
