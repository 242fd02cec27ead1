"""Store seeding for the dashboard tests, through the store's own functions (the same calls
the engine makes), for states a real run reaches only with a person in the loop, and a signed-in
AppTest session."""

from __future__ import annotations

import json
from dataclasses import dataclass

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


@dataclass
class Chain:
    """A template run with real submissions: its input, and each step's output citing the
    input values it was taken from (what a run of ``contract_digest`` records)."""

    run_id: str
    input_id: str
    points_id: str
    digest_id: str
    #: version ids by path: ``document.text``, ``points[0].statement``, ``digest.headline`` …
    versions: dict[str, str]
    visits: dict[str, str]


CONTRACT_TEXT = "ACME sells Initech 40 drills for $900 a year. Either side may end it with 30 days' notice."
EXTRACT_PROMPT = "List the key points of this contract:\n" + CONTRACT_TEXT
DIGEST_PROMPT = "Write a one-line digest of these points:\n- payment: $900 a year\n- term: 30 days' notice"


def template_chain(started_by: str = "starter") -> Chain:
    """A completed ``contract_digest`` run (the definitions of ``ui_defs.SUBMISSION_DEFS`` must
    be in the definitions folder): its input submission (imported), the key points its first step
    extracted from the contract's text, and the digest its second step wrote from the points; each
    step with its model call, whose answer cites the input values by ``refId``."""
    from flows.store import submissions as submission_store
    from flows.store.submissions import Cell, NewValue
    from flows.submissions import records
    from ui_defs import TEMPLATE

    data = {"document": {"title": "ACME drills", "text": CONTRACT_TEXT},
            "preferences": {"audience": "legal", "max_words": 120}}
    form, digest = records.form_named("contract_in")
    input_id = records.create(form, digest, data, created_by="importer", source_type="import", tell=False)
    versions = {f"{c.cell.group}.{c.cell.field}": c.version_id for c in records.view(input_id).values}
    run = run_store.create_run("contract_digest", content=yaml.safe_load(TEMPLATE), inputs={"input": data},
                               context={"input": data}, started_by=started_by, input_submission_id=input_id)
    run_store.set_run_status(run.id, "running")
    context: dict = {"input": data}
    visits: dict[str, str] = {}

    def step(key: str, form_name: str, prompt: str, cells: list[tuple[Cell, object, list[str]]], output_key: str,
             out: dict, next_node: str | None) -> str:
        visit = visit_store.start_visit(run.id, key, "agent", input={"prompt": prompt})
        visits[key] = visit.id
        out_form, out_hash = records.form_named(form_name)
        repeats = {g.name for g in out_form.groups if g.repeat}
        answer: dict = {}  # the model's answer: every field as {value, refId}
        for cell, value, refs in cells:
            slot = {"value": value, "refId": refs[0] if len(refs) == 1 else refs}
            if cell.group in repeats:
                entries = answer.setdefault(cell.group, [])
                while len(entries) <= cell.entry:
                    entries.append({})
                entries[cell.entry][cell.field] = slot
            else:
                answer.setdefault(cell.group, {})[cell.field] = slot
        call = visit_store.record_llm_call(run.id, "offline", visit_id=visit.id, tokens_in=40, tokens_out=25,
                                           messages=[{"role": "system", "content": "Answer each field as {value, refId}."},
                                                     {"role": "user", "content": prompt}],
                                           response=json.dumps(answer), latency_ms=120, offline=True)
        sid, rows = submission_store.submission_rows(
            form_name=out_form.name, form_hash=out_hash, source_type="transformation", origin="transformation",
            values=[NewValue(cell, value, kind="llm_extract", inputs=refs) for cell, value, refs in cells],
            run_id=run.id, visit_id=visit.id, step_key=key, llm_call_id=call.id)
        before = dict(context)
        context[output_key] = out
        # as the run's recorder closes a step: the output submission in the visit's checkpoint
        visit_store.close_visit(visit.id, run.id, started_at=visit.started_at, status="completed",
                                output={output_key: out}, context_diff=context_diff(before, context),
                                context=dict(context), next_node=next_node, submission=(sid, rows))
        return sid

    text = versions["document.text"]
    points = {"points": [{"topic": "payment", "statement": "Initech pays $900 a year.", "risky": False},
                         {"topic": "term", "statement": "Either side may end it with 30 days' notice.", "risky": True}]}
    points_id = step("extract_points", "contract_points", EXTRACT_PROMPT, [
        (Cell("points", 0, "topic"), "payment", [text]),
        (Cell("points", 0, "statement"), "Initech pays $900 a year.", [text]),
        (Cell("points", 0, "risky"), False, [text]),
        (Cell("points", 1, "topic"), "term", [text]),
        (Cell("points", 1, "statement"), "Either side may end it with 30 days' notice.", [text]),
        (Cell("points", 1, "risky"), True, [text]),
    ], "key_points", points, "write_digest")
    for c in records.view(points_id).values:
        versions[f"{c.cell.group}[{c.cell.entry}].{c.cell.field}"] = c.version_id
    digest_data = {"digest": {"headline": "Drills for $900 a year, ends on 30 days' notice", "risk_level": "medium"}}
    digest_id = step("write_digest", "contract_digest_out", DIGEST_PROMPT, [
        (Cell("digest", 0, "headline"), digest_data["digest"]["headline"],
         [versions["points[0].statement"], versions["points[1].statement"]]),
        (Cell("digest", 0, "risk_level"), "medium", [versions["points[1].risky"]]),
    ], "digest", digest_data, None)
    for c in records.view(digest_id).values:
        versions[f"{c.cell.group}.{c.cell.field}"] = c.version_id
    run_store.set_run_status(run.id, "completed", outcome="write_digest")
    return Chain(run.id, input_id, points_id, digest_id, versions, visits)



def json_trees(at) -> list:
    """The values a page shows as JSON trees (``ui/json_view.py``): each tree's text, which is the
    value's JSON, read back."""
    import html
    import re

    trees = [h.value for h in at.html if 'class="ergon-json"' in h.value]
    return [json.loads(html.unescape(re.sub(r"<[^>]+>", "", re.sub(r"<style>.*?</style>", "", t, flags=re.S))))
            for t in trees]
