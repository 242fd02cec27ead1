"""Store seeding for the dashboard tests, through the store's own functions (the same calls
the engine makes), for states a real run reaches only with a person in the loop, and a signed-in
AppTest session."""

from __future__ import annotations

import yaml

from ui_defs import REVIEW
from flows.store import artifacts as artifact_store
from flows.store import runs as run_store
from flows.store import tasks as task_store
from flows.store import visits as visit_store
from flows.store.diff import context_diff

#: A system prompt whose line breaks and "- " lines are what the model read.
PROMPT = "You count.\n\nRules:\n- add one\n- never skip a number"
FIELDS = [{"name": "decision", "type": "select", "required": True, "options": ["approve", "reject"]},
          {"name": "notes", "type": "text"}]


def paused_review(party: str = "ACME", started_by: str = "starter"):
    """A `review` run waiting at its human task (what a real run looks like while it waits):
    returns (run, task)."""
    content = yaml.safe_load(REVIEW)
    run = run_store.create_run("review", content=content, inputs={"party": party}, context={"party": party, "counter": 0},
                               started_by=started_by)
    run_store.set_run_status(run.id, "running")
    before, after = {"party": party, "counter": 0}, {"party": party, "counter": 1}
    visit = visit_store.start_visit(run.id, "prepare", "tool", input={"value": 0})
    visit_store.checkpoint_visit(visit.id, run.id, output={"counter": 1}, context_diff=context_diff(before, after),
                                 context=after, next_node="review")
    visit_store.record_tool_call(run.id, "increment", visit_id=visit.id, args={"value": 0}, result={"counter": 1})
    visit_store.record_llm_call(run.id, "offline", visit_id=visit.id, tokens_in=12, tokens_out=7, cost_usd=0.002,
                                messages=[{"role": "system", "content": PROMPT}, {"role": "user", "content": "Count, please."}],
                                response='{"counter": 1}', latency_ms=840, offline=True)  # as a model wrote it: text
    waiting = visit_store.start_visit(run.id, "review", "human_task", input={})
    visit_store.finish_visit(waiting.id, "paused")
    task = task_store.create_task(run.id, "review", f"Review {party}", visit_id=waiting.id,
                                  description=f"Please decide about **{party}**.", assignee="group:legal", fields=FIELDS)
    run_store.set_run_status(run.id, "paused")
    return run_store.get_run(run.id), task


def artifacts(run_id: str, *, title: str = "Hello", score: int = 1) -> None:
    artifact_store.record_artifact(run_id, "report", "markdown", f"# {title}\n\nAll good.", description="The report")
    artifact_store.record_artifact(run_id, "scores", "json", {"score": score, "tags": ["a", "b"]})
    artifact_store.record_artifact(run_id, "lines", "table", [{"item": "x", "amount": 1}, {"item": "y", "amount": 2}])
    artifact_store.record_artifact(run_id, "trend", "chart", {"data": [{"day": "mon", "n": 1}, {"day": "tue", "n": 3}],
                                                              "x": "day", "y": "n", "kind": "line"})


def sign_in(at, user: str) -> None:
    """Sign ``user`` in for an AppTest: a real session token where the browser's cookie would be
    (AppTest sends no cookies; ``ui/auth.py`` checks this token like the cookie)."""
    from flows import people
    from flows.store import people as people_store
    from ui import auth, session

    if people_store.get_user(user) is None:
        people.add_user(user)
    at.session_state[auth.TEST_TOKEN_KEY] = session.issue(user)[0]
