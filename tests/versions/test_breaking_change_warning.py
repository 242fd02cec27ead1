"""Publishing warns about paused runs a change breaks — with a really paused run: a background
`ergon run` waiting on a human task while new versions are published."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
from versions_samples import review

pytestmark = pytest.mark.prefect

ERGON = [sys.executable, "-m", "flows.cli"]

WITHOUT_PREPARE_AND_COUNTER = """\
format_version: 1
process: review
initial: review
context:
  schema:
    type: object
    properties:
      party: {type: string}
      decision: {type: string}
    required: [party]
nodes:
  review:
    type: human_task
    task:
      title: "Review {{ party }}"
      assignee: group:legal
      fields:
        - {name: decision, type: select, required: true, options: [approve, reject]}
    writes: [decision]
    transitions:
      - {to: done, guard: {"==": [{var: decision}, approve]}}
      - {to: rejected}
  done: {type: final}
  rejected: {type: final}
"""


def wait_until_paused(timeout: float = 120.0):
    from flows.store import runs as run_store
    from flows.store import tasks as task_store

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        tasks, _ = task_store.list_tasks(status="pending")
        for task in tasks:
            run = run_store.get_run(task.run_id)
            if run.definition_name == "review" and run.status == "paused":
                return run, task
        time.sleep(0.2)
    raise AssertionError("the review run never paused")


def test_publish_names_the_paused_runs_a_change_breaks(prefect_api, folder, ergon, store, tokens):
    from flows.store import definitions as definition_store
    from flows.store import runs as run_store

    assert ergon("publish", "review", "-m", "v1")[0] == 0
    env = {**os.environ, "ERGON_DATABASE_URL": store, "ERGON_DEFINITIONS": str(folder), "ERGON_TOKEN": tokens["starter"]}
    proc = subprocess.Popen(ERGON + ["run", "review", "--input", "party=ACME", "--json"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        run, task = wait_until_paused()
        assert run.definition_version == 1 and task.node_id == "review"

        # A new title only: nothing the paused run relies on changes — no warning.
        (folder / "review.yaml").write_text(review().replace('"Review {{ party }}"', '"Check {{ party }}"'))
        code, out, err = ergon("publish", "review")
        assert code == 0 and "published review version 2" in out and "warning" not in err

        # New task fields and a retyped context field break it: --strict refuses, naming the run.
        (folder / "review.yaml").write_text(review("approve, reject, escalate", counter_type="string"))
        code, out, err = ergon("publish", "review", "--strict")
        assert code == 1 and "not published: the change breaks 1 paused run(s) (--strict)" in err
        assert f"run {run.id} (paused at review, started on v1)" in err
        assert [v.version for v in definition_store.list_versions("review")] == [2, 1]
        code, out, err = ergon("publish", "review")
        assert code == 0 and "published review version 3" in out
        assert f"warning: run {run.id} (paused at review, started on v1)" in err
        assert "the fields of human task `review`, which the run waits on, change" in err
        assert "context field `counter` changes type from integer to string" in err
        assert "they keep running on their own version" in err

        # Removing a node the run has visited, and a context field, break it too.
        (folder / "review.yaml").write_text(WITHOUT_PREPARE_AND_COUNTER)
        code, out, err = ergon("publish", "review")
        assert code == 0 and "published review version 4" in out, err
        assert "node `prepare`, which the run has visited, is removed" in err
        assert "context field `counter` is removed" in err

        # The paused run still finishes on the version it started with.
        answer = subprocess.run(ERGON + ["users", "add", "alice", "--group", "legal", "--token", tokens.admin], env=env,
                                capture_output=True, text=True, timeout=120, check=False)
        assert answer.returncode == 0, answer.stderr
        answer = subprocess.run(ERGON + ["tasks", "answer", task.id, "--set", "decision=approve", "--token", tokens["alice"]],
                                env=env, capture_output=True, text=True, timeout=120, check=False)
        assert answer.returncode == 0, answer.stdout + answer.stderr
        out, err = proc.communicate(timeout=120)
        result = json.loads(out.strip().splitlines()[-1])
        assert result["status"] == "completed" and result["outcome"] == "done", err
        assert run_store.get_run(run.id).definition_version == 1
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
