"""The tutorial's contract-review process, as shipped in definitions/, end to end: the agents
talk to a local OpenAI-compatible server (ERGON_MODEL + the standard OPENAI_* variables, as a
user would point Ergon at any compatible endpoint), extract a 97,500 contract, risk_route sends
it to legal_review, and a member of group:legal decides — the tutorial's three outcomes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from test_pause_resume import ERGON, cli, wait_for_task

pytestmark = pytest.mark.prefect

DEFINITIONS = Path(__file__).parents[2] / "definitions"
sys.path.insert(0, str(Path(__file__).parents[1] / "llm"))

from fake_openai import FakeOpenAI  # noqa: E402

TERMS = {"parties": "ACCOR SA and Vertesia SAS", "term_length": "12 months", "governing_law": "French law",
         "total_value": 97500, "auto_renewal": False}
CLAUSES = {"flagged_clauses": [{"clause_type": "indemnification", "excerpt": "...", "risk_level": "medium",
                                "reason": "broad"}], "has_critical_flag": False}
STORED = {"output_doc_id": "doc-review-1"}


@pytest.fixture(scope="module")
def model_server():
    server = FakeOpenAI().start()
    yield server
    server.stop()


@pytest.fixture
def env(prefect_api, store, model_server, tokens):
    model_server.reset()
    env = {**os.environ, "ERGON_DATABASE_URL": store, "ERGON_DEFINITIONS": str(DEFINITIONS), "COLUMNS": "200",
           "ERGON_TOKEN": tokens["requester"], "ERGON_MODEL": "openai/contract-model", "OPENAI_API_KEY": "sk-test",
           "OPENAI_API_BASE": model_server.url, "OPENAI_BASE_URL": model_server.url}
    assert cli(["users", "add", "lea", "--group", "legal", "--token", tokens.admin], env).returncode == 0
    return env


def run_with_answers(env: dict, decisions: list[str], server: FakeOpenAI, tokens) -> tuple[dict, list[str]]:
    from flows.store import visits as visit_store

    # the agents answer in call order: extract, flag (again after request_edits), store
    answers = [{"json": TERMS}] + [{"json": CLAUSES}] * decisions.count("request_edits") + [{"json": CLAUSES}]
    server.script("contract-model", *answers, {"json": STORED})
    proc = subprocess.Popen(ERGON + ["run", "contract_review", "--input", "contract_doc_id=doc-7", "--json"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen: set[str] = set()
    try:
        for decision in decisions:
            try:
                task = wait_for_task("contract_review", after=seen)
            except AssertionError:
                proc.kill()
                out, err = proc.communicate()
                raise AssertionError(f"the run never paused:\n{out}\n{err}") from None
            seen.add(task.id)
            assert task.title.startswith("Legal Review Required: ")
            done = cli(["tasks", "answer", task.id, "--set", f"legal_decision={decision}",
                        "--set", f"legal_notes=lea says {decision}", "--token", tokens["lea"]], env)
            assert done.returncode == 0, done.stdout + done.stderr
        out, err = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
    result = json.loads(out.strip().splitlines()[-1])
    return result, [v.node_id for v in visit_store.visits_for_run(result["run_id"]) if v.parent_visit_id is None]


def test_approve_goes_to_done(env, model_server, tokens):
    result, route = run_with_answers(env, ["approve"], model_server, tokens)
    assert result["status"] == "completed" and result["outcome"] == "done", result
    assert route == ["extract_terms", "flag_clauses", "risk_route", "legal_review", "store_output", "done"]
    assert result["context"]["legal_decision"] == "approve"
    assert result["context"]["total_value"] == 97500 and result["context"]["output_doc_id"] == "doc-review-1"


def test_reject_goes_to_rejected(env, model_server, tokens):
    result, route = run_with_answers(env, ["reject"], model_server, tokens)
    assert result["outcome"] == "rejected"
    assert route[-2:] == ["legal_review", "rejected"]


def test_request_edits_loops_back_to_flag_clauses_then_approve(env, model_server, tokens):
    result, route = run_with_answers(env, ["request_edits", "approve"], model_server, tokens)
    assert result["outcome"] == "done"
    assert route == ["extract_terms", "flag_clauses", "risk_route", "legal_review",
                     "flag_clauses", "risk_route", "legal_review", "store_output", "done"]
    assert result["context"]["legal_notes"] == "lea says approve"
