"""Ergon's moments reach Prefect's event API, for automations to act on.

Real processes against the session's Prefect server: ``ergon run`` of a process with a human
task, ``ergon tasks answer`` from another process, a run that fails, a submission changed from
the CLI. The events are read back from Prefect's own event API (what an automation sees):
names, resources, labels, the flow run they relate to, and payloads without the run's context.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

pytestmark = pytest.mark.prefect

ERGON = [sys.executable, "-m", "flows.cli"]

REVIEW = """
format_version: 1
process: reviewed
initial: review
context:
  schema:
    type: object
    properties:
      decision: {type: string}
      secret_note: {type: string}
  initial: {secret_note: do-not-send}
nodes:
  review:
    type: human_task
    task:
      title: Review the contract
      assignee: ann
      fields:
        - {name: decision, type: select, required: true, options: [approve, reject]}
    writes: [decision]
    transitions: [{to: done}]
  done: {type: final}
"""

BROKEN = """
format_version: 1
process: broken
initial: boom
context:
  schema:
    type: object
    properties:
      doubled: {type: integer}
nodes:
  boom: {type: tool, tool: double_unless, input: {value: 3, bad: 3}, writes: [doubled], transitions: [{to: done}]}
  done: {type: final}
"""


def _events(since: datetime, prefix: str = "ergon.") -> list:
    from prefect.client.orchestration import get_client
    from prefect.events.filters import EventFilter, EventNameFilter, EventOccurredFilter

    with get_client(sync_client=True) as client:
        page = client.read_events(EventFilter(occurred=EventOccurredFilter(since=since),
                                              event=EventNameFilter(prefix=[prefix])), limit=50)
        events = list(page.events)
        while page.next_page:
            page = client.read_events_page(str(page.next_page))
            events += page.events
    return events


def _wait_for_events(since: datetime, wanted: set[tuple[str, str]], timeout: float = 60) -> list:
    """Poll Prefect's event API until every (event name, resource id) in ``wanted`` is there
    (the server persists events a moment after it receives them)."""
    deadline = time.monotonic() + timeout
    while True:
        events = _events(since)
        seen = {(e.event, e.resource.id) for e in events}
        if wanted <= seen or time.monotonic() > deadline:
            assert wanted <= seen, f"missing {sorted(wanted - seen)}; got {sorted(seen)}"
            return events
        time.sleep(0.5)


def _env(store: str, definitions: Path, tmp_path: Path, token: str) -> dict[str, str]:
    return {**os.environ, "ERGON_DATABASE_URL": store, "ERGON_DEFINITIONS": str(definitions),
            "ERGON_HOME": str(tmp_path / "home"), "ERGON_TOKEN": token, "COLUMNS": "200"}


def test_a_run_its_task_and_its_answer_are_prefect_events(prefect_api, store, definitions, tokens, tmp_path):
    from flows.store import runs as run_store
    from flows.store import tasks as task_store

    since = datetime.now(timezone.utc) - timedelta(seconds=1)
    (definitions / "reviewed.yaml").write_text(REVIEW)
    env = _env(store, definitions, tmp_path, tokens["starter"])
    proc = subprocess.Popen(ERGON + ["run", "reviewed", "--json"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        task = None
        while task is None and time.monotonic() < deadline and proc.poll() is None:
            task = next(iter(task_store.list_tasks(status="pending")[0]), None)
            time.sleep(0.2)
        assert task is not None, proc.stderr.read() if proc.poll() is not None else "no task"
        answered = subprocess.run(ERGON + ["tasks", "answer", task.id, "--set", "decision=approve",
                                           "--token", tokens["ann"]], env=env, capture_output=True, text=True,
                                  timeout=120)
        assert answered.returncode == 0, answered.stdout + answered.stderr
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, out + err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    run = run_store.get_run(task.run_id)
    assert run.status == "completed"
    events = _wait_for_events(since, {("ergon.run.started", f"ergon.run.{run.id}"),
                                      ("ergon.task.created", f"ergon.task.{task.id}"),
                                      ("ergon.task.answered", f"ergon.task.{task.id}"),
                                      ("ergon.run.completed", f"ergon.run.{run.id}")})
    by_name = {e.event: e for e in events if e.resource.id in (f"ergon.run.{run.id}", f"ergon.task.{task.id}")}
    completed = by_name["ergon.run.completed"]
    assert completed.resource["ergon.definition"] == "reviewed" and completed.resource["ergon.status"] == "completed"
    assert completed.payload.get("outcome") == "done"
    related = {r.id: r.role for r in completed.related}
    assert related[f"ergon.run.{run.id}"] == "ergon-run"
    assert related[f"prefect.flow-run.{run.prefect_flow_run_id}"] == "flow-run", related
    created = by_name["ergon.task.created"]
    assert created.resource["ergon.assignee"] == "ann" and created.payload["title"] == "Review the contract"
    assert f"ergon.run.{run.id}" in {r.id for r in created.related}, "an automation can go from the task to its run"
    assert by_name["ergon.task.answered"].payload["answered_by"] == "ann"
    sent = json.dumps([e.model_dump(mode="json") for e in events])
    assert "do-not-send" not in sent, "a run's context never goes out in an event"


def test_a_failed_run_and_a_changed_submission_are_prefect_events(prefect_api, store, definitions, tokens, tmp_path):
    from flows.store import runs as run_store

    since = datetime.now(timezone.utc) - timedelta(seconds=1)
    (definitions / "broken.yaml").write_text(BROKEN)
    env = _env(store, definitions, tmp_path, tokens["starter"])
    failed = subprocess.run(ERGON + ["run", "broken", "--json"], env=env, capture_output=True, text=True, timeout=180)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    run_id = json.loads(failed.stdout.strip().splitlines()[-1])["run_id"]
    assert run_store.get_run(run_id).status == "failed"

    forms = definitions / "forms"
    forms.mkdir(exist_ok=True)
    (forms / "note.yaml").write_text("kind: form\nname: note\ngroups:\n"
                                     "  - {name: main, fields: [{name: text, type: text}]}\n")
    data = tmp_path / "note.json"
    data.write_text(json.dumps({"main": {"text": "hello"}}))
    made = subprocess.run(ERGON + ["submissions", "create", "note", "--file", str(data), "--json"], env=env,
                          capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, made.stdout + made.stderr
    submission_id = json.loads(made.stdout.strip().splitlines()[-1])["id"]

    events = _wait_for_events(since, {("ergon.run.failed", f"ergon.run.{run_id}"),
                                      ("ergon.submission.created", f"ergon.submission.{submission_id}")})
    failure = next(e for e in events if e.event == "ergon.run.failed")
    assert "item 3 is bad" in failure.payload["error"] and failure.resource["ergon.definition"] == "broken"
    submission = next(e for e in events if e.event == "ergon.submission.created")
    assert submission.resource["ergon.form"] == "note"


UPSTREAM = """
format_version: 1
process: {name}
initial: go
context:
  schema:
    type: object
    properties:
      last: {{type: string}}
nodes:
  go: {{type: tool, tool: mark, input: {{name: up}}, writes: [last], transitions: [{{to: done}}]}}
  done: {{type: final}}
"""

DOWNSTREAM = """
format_version: 1
process: {name}
initial: go
context:
  schema:
    type: object
    properties:
      title: {{type: string}}
      report_text: {{type: string}}
      last: {{type: string}}
    required: [title, report_text]
nodes:
  go: {{type: tool, tool: mark, input: {{name: down}}, writes: [last], transitions: [{{to: done}}]}}
  done: {{type: final}}
"""

AUTOMATIONS = Path(__file__).resolve().parents[2] / "docs" / "automations"


def test_the_readmes_automation_starts_a_deployment_when_a_run_completes(prefect_api, store, definitions, tokens,
                                                                         tmp_path):
    """docs/automations/run-after-completed.yaml, as the README tells a user to create it."""
    import uuid

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import DeploymentFilter, DeploymentFilterId

    suffix = uuid.uuid4().hex[:8]
    up, down = f"invoices_{suffix}", f"report_{suffix}"
    (definitions / f"{up}.yaml").write_text(UPSTREAM.format(name=up))
    (definitions / f"{down}.yaml").write_text(DOWNSTREAM.format(name=down))
    env = _env(store, definitions, tmp_path, tokens["starter"])
    deployed = subprocess.run(ERGON + ["deploy", down, "--work-pool", f"idle-{suffix}", "--prefect-file",
                                       str(tmp_path / "prefect.yaml")], env=env, capture_output=True, text=True,
                              timeout=600)
    assert deployed.returncode == 0, deployed.stdout + deployed.stderr
    with get_client(sync_client=True) as client:
        deployment = client.read_deployment_by_name(f"{down}/{down}")
    automation = tmp_path / "automation.yaml"
    automation.write_text((AUTOMATIONS / "run-after-completed.yaml").read_text()
                          .replace("invoice_processing", up).replace("DEPLOYMENT_ID", str(deployment.id))
                          .replace("name: report-after-invoice-processing", f"name: report-after-{up}"))
    created = subprocess.run([sys.executable, "-m", "prefect", "automation", "create", "--from-file", str(automation)],
                             env=env, capture_output=True, text=True, timeout=120)
    assert created.returncode == 0, created.stdout + created.stderr

    ran = subprocess.run(ERGON + ["run", up, "--json"], env=env, capture_output=True, text=True, timeout=180)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    run_id = json.loads(ran.stdout.strip().splitlines()[-1])["run_id"]

    deadline = time.monotonic() + 90
    started = []
    while not started and time.monotonic() < deadline:
        with get_client(sync_client=True) as client:
            started = client.read_flow_runs(deployment_filter=DeploymentFilter(id=DeploymentFilterId(any_=[deployment.id])))
        time.sleep(1)
    assert started, "Prefect's automation started the deployment when the Ergon run completed"
    assert started[0].parameters == {"title": f"{up} run {run_id}", "report_text": "ended done"}


def test_the_readmes_notification_automation_is_accepted_by_prefect(prefect_api, tmp_path):
    """docs/automations/notify-approvers.yaml, with a real notification block, as a user creates it."""
    import uuid

    from prefect.blocks.notifications import CustomWebhookNotificationBlock

    block_name = f"approvers-{uuid.uuid4().hex[:8]}"
    block_id = CustomWebhookNotificationBlock(name="approvers", url="http://127.0.0.1:9/hook").save(block_name)
    automation = tmp_path / "automation.yaml"
    automation.write_text((AUTOMATIONS / "notify-approvers.yaml").read_text()
                          .replace("BLOCK_DOCUMENT_ID", str(block_id))
                          .replace("name: ergon-task-waits-for-approvers", f"name: {block_name}"))
    created = subprocess.run([sys.executable, "-m", "prefect", "automation", "create", "--from-file", str(automation)],
                             env=dict(os.environ), capture_output=True, text=True, timeout=120)
    assert created.returncode == 0, created.stdout + created.stderr
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        [found] = client.read_automations_by_name(block_name)
    assert found.trigger.expect == {"ergon.task.created"} and found.actions[0].type == "send-notification"
