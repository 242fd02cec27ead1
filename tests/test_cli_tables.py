"""`ergon runs list` and `ergon tasks list` never cut an id, at 80 columns and piped; `--wide`
shows every column; `ergon runs show` says who or what started a run and its model use.

Each command runs as a subprocess on the test's store, its output piped (as in `ergon runs list |
grep`), so Rich lays it out for a pipe: ``COLUMNS`` when set, else 80 columns.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ERGON = str(Path(sys.executable).parent / "ergon")
LONG_TITLE = "Approve the onboarding of ACME Precision Tools GmbH as a hardware supplier for the Lyon plant"


@pytest.fixture
def env(store) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "PYTHONPATH", "ERGON_DEFINITIONS")}
    return {**clean, "ERGON_DATABASE_URL": store}


def ergon(cwd: Path, env: dict[str, str], *args: str) -> str:
    done = subprocess.run([ERGON, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.fixture
def recorded(store) -> dict[str, str]:
    """A run started through a deployment (no user) with two model calls, and one a user started."""
    from flows.store import runs as run_store
    from flows.store import visits as visit_store

    deployed = run_store.create_run("vendor_onboarding_with_a_long_name", trigger="api")
    run_store.update_run(deployed.id, deployment="vendor-onboarding/prod", work_pool="docker-pool")
    run_store.set_run_status(deployed.id, "running")
    run_store.set_run_status(deployed.id, "completed", outcome="approved")
    visit_store.record_llm_call(deployed.id, "openai/gpt-4o-mini", tokens_in=1200, tokens_out=345, cost_usd=0.0042)
    visit_store.record_llm_call(deployed.id, "openai/gpt-4o-mini", tokens_in=100, tokens_out=55, cost_usd=0.0008)
    manual = run_store.create_run("hello_process", trigger="manual", started_by="ada")
    return {"deployed": deployed.id, "manual": manual.id}


@pytest.mark.parametrize("columns", ["80", None], ids=["COLUMNS=80", "piped"])
def test_runs_list_never_cuts_a_run_id(recorded, env, tmp_path, columns):
    shown = ergon(tmp_path, {**env, **({"COLUMNS": columns} if columns else {})}, "runs", "list")
    for run_id in recorded.values():
        assert run_id in shown, shown
    assert "…" not in shown
    assert max(len(line) for line in shown.splitlines()) <= 80, "it fits the 80 columns"
    assert "--wide" in shown, "it says that columns were left out and how to see them"

    wide = ergon(tmp_path, {**env, **({"COLUMNS": columns} if columns else {})}, "runs", "list", "--wide")
    for text in (*recorded.values(), "vendor_onboarding_with_a_long_name", "deployment vendor-onboarding/prod", "ada",
                 "manual", "api"):
        assert text in wide, (text, wide)
    assert "…" not in wide


def test_runs_show_says_who_started_it_and_what_it_cost(recorded, env, tmp_path):
    text = ergon(tmp_path, env, "runs", "show", recorded["deployed"])
    assert "by=None" not in text and "None" not in text.splitlines()[1]
    assert "through Prefect's API via deployment vendor-onboarding/prod (work pool docker-pool)" in text
    assert "model calls: 2, tokens: 1700 (1300 in, 400 out), cost: $0.0050" in text
    found = json.loads(ergon(tmp_path, env, "runs", "show", recorded["deployed"], "--json"))["run"]
    assert found["usage"] == {"llm_calls": 2, "tokens_in": 1300, "tokens_out": 400, "tokens": 1700,
                              "cost_usd": pytest.approx(0.005)}
    assert "deployment vendor-onboarding/prod" in found["started"]
    manual = ergon(tmp_path, env, "runs", "show", recorded["manual"])
    assert "started by ada" in manual and "model calls: none" in manual


@pytest.mark.parametrize("columns", ["80", None], ids=["COLUMNS=80", "piped"])
def test_tasks_list_never_cuts_a_task_id(store, tokens, env, tmp_path, columns):
    from flows.store import runs as run_store
    from flows.store import tasks as task_store

    run = run_store.create_run("vendor_onboarding", started_by="ada")
    task = task_store.create_task(run.id, "approve", LONG_TITLE, assignee="group:procurement-approvers-emea")
    listed = ergon(tmp_path, {**env, **({"COLUMNS": columns} if columns else {})}, "tasks", "list", "--token",
                   tokens.admin)
    assert task.id in listed and "…" not in listed, listed
    assert "Approve" in listed and "Lyon" in listed.replace("\n", " "), "the title wraps, it is not cut"
    wide = ergon(tmp_path, env, "tasks", "list", "--token", tokens.admin, "--wide")
    assert task.id in wide and LONG_TITLE in wide and "group:procurement-approvers-emea" in wide
