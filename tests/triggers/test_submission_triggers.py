"""Submission triggers: checked by the compiler, fired by the process that creates or changes a
submission (real store, real `ergon` processes, real Prefect runs)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from compiler import check_workspace, workspace_from_texts
from trigger_helpers import wait_for

REPO = Path(__file__).parent.parent.parent
FORMS = {f"forms/{p.name}": p.read_text() for p in sorted((REPO / "definitions" / "forms").glob("*.yaml"))}
SUMMARY = (REPO / "definitions" / "document_summary.yaml").read_text()

WATCHER = """
kind: pipeline
name: watcher
context:
  schema:
    type: object
    properties: {who: {type: string}, count: {type: integer}, first: {type: string}, last: {type: string}}
    required: [who, count, first]
triggers:
  - type: on_submission_updated
    form: key_points
    as_user: form-bot
    filter: {"==": [{var: points.0.risky}, true]}
    map: {who: "{{ submission_id }}", count: "{{ submission.points | length }}", first: "{{ form }}: {{ submission.points[0].topic }}"}
nodes:
  note: {type: tool, tool: mark, input: {name: "{{ first }}"}, writes: [last]}
"""

POINTS = {"points": [{"topic": "term", "statement": "Two years."}, {"topic": "payment", "statement": "Net 30."}]}
CONTRACT = {"document": {"document_id": "doc-1", "document_text": "Acme supplies widgets for two years; net 30."},
            "preferences": {"audience": "legal", "max_words": 60}}


# ------------------------------------------------------------------------------------- checks


def diagnostics(texts: dict[str, str]) -> dict[str, object]:
    found = check_workspace(workspace_from_texts({**FORMS, **texts})).diagnostics
    return {d.path: d for d in found if d.path.startswith("triggers")}


def test_the_checker_locates_every_submission_trigger_mistake():
    found = diagnostics({"document_summary.yaml": SUMMARY + """
triggers:
  - {type: on_submission_created, form: contract_inpt}
  - {type: on_submission_created, form: key_points}
  - {type: on_submission_updated, form: contract_input, filter: {"==": [{var: preferences.audiense}, legal]}}
  - {type: on_submission_updated, form: contract_input, filter: {"frobnicate": [1]}}
  - {type: on_submission_updated, form: contract_input, map: {x: "{{ submission }}"}}
""", "watch.yaml": """
kind: pipeline
name: watch
context:
  schema: {type: object, properties: {who: {type: string}, count: {type: integer}}, required: [who, count]}
nodes:
  n: {type: tool, tool: log, input: {message: hi}}
triggers:
  - {type: on_submission_updated, form: key_points, filter: {"==": [{var: clauses.0.topic}, term]}, map: {who: "{{ sid }}"}}
"""})
    unknown = found["triggers[0].form"]
    assert (unknown.code, unknown.file, unknown.line) == ("unknown-form", "document_summary.yaml", SUMMARY.count("\n") + 3)
    assert unknown.col > 1 and unknown.hint == "did you mean `contract_input`?"
    assert "a trigger on `key_points` would start it" in found["triggers[1].form"].message
    assert found["triggers[1].form"].code == "bad-value"
    field = found["triggers[2].filter.==[0].var"]
    assert (field.code, field.hint) == ("unknown-field", "did you mean `audience`?")
    assert found["triggers[3].filter"].code == "guard-invalid"
    assert found["triggers[4].map"].code == "bad-value"  # a template takes the submission, nothing else
    assert found["triggers[0].filter.==[0].var"].message == "form `key_points` has no group `clauses`"
    assert found["triggers[0].map.who"].code == "unknown-field"  # the map sees submission, submission_id, form
    missing = found["triggers[0].map"]
    assert missing.code == "missing-field" and "`count` is a required input of `watch`" in missing.message


def test_a_well_formed_submission_trigger_passes_the_check():
    texts = {"document_summary.yaml": SUMMARY + """
triggers:
  - {type: on_submission_created, form: contract_input, filter: {"==": [{var: preferences.audience}, legal]}}
""", "watcher.yaml": WATCHER}
    assert diagnostics(texts) == {}


# ------------------------------------------------------------------------------------- firing


def runs_of(name: str):
    from flows.store import runs as run_store

    return sorted(run_store.list_runs(definition=name, limit=500)[0], key=lambda r: r.created_at)


@pytest.fixture
def folder(prefect_api, store, definitions):
    for name, text in FORMS.items():
        (definitions / name).parent.mkdir(exist_ok=True)
        (definitions / name).write_text(text)
    return definitions


@pytest.mark.prefect
def test_an_updated_trigger_fires_once_per_update_and_only_when_its_filter_holds(folder, monkeypatch):
    from flows.submissions import records
    from flows.submissions.shape import parse_assignment

    (folder / "watcher.yaml").write_text(WATCHER)
    form, digest = records.form_named("key_points")
    sid = records.create(form, digest, POINTS, created_by="lea")
    assert runs_of("watcher") == []  # a creation is not an update

    def set_(*assignments: str) -> None:
        records.set_values(sid, [parse_assignment(form, a) for a in assignments], by="lea")

    set_("points[1].statement=Net 45.")  # points[0].risky is unset: the filter is false
    assert runs_of("watcher") == []
    set_("points[0].risky=true", "points[2].topic=liability", "points[2].statement=Capped.")  # one update, three values
    assert len(runs_of("watcher")) == 1
    set_("points[0].risky=false", "points[0].statement=Three years.")
    assert len(runs_of("watcher")) == 1  # false again: nothing more

    monkeypatch.setenv("ERGON_CHAIN_DEPTH", "5")  # a change made five chained starts deep
    set_("points[0].risky=true")
    assert len(runs_of("watcher")) == 1  # the loop guard starts nothing
    monkeypatch.delenv("ERGON_CHAIN_DEPTH")
    from flows.triggers import control

    control.set_paused("watcher:0", True)  # `ergon schedules pause watcher:0`
    set_("points[0].statement=Four years.")
    assert len(runs_of("watcher")) == 1
    control.set_paused("watcher:0", False)

    run = wait_for(lambda: (rs := runs_of("watcher")) and rs[0].status in ("completed", "failed") and rs[0], 120,
                   "the triggered run")
    assert (run.status, run.trigger, run.started_by) == ("completed", "on_submission_updated", "form-bot")
    assert run.inputs == {"who": sid, "count": 3, "first": "key_points: term"}  # `count` kept its type
    assert run.context["last"] == "key_points: term"

    from flows.store import triggers as trigger_store

    (state,) = trigger_store.list_trigger_states()
    assert (state.definition_name, state.kind, state.last_run_id) == ("watcher", "on_submission_updated", run.id)


@pytest.mark.prefect
def test_a_created_trigger_starts_the_template_with_the_submission_as_its_input(folder, tmp_path, tokens):
    (folder / "document_summary.yaml").write_text(SUMMARY + """
triggers:
  - {type: on_submission_created, form: contract_input, as_user: intake-bot,
     filter: {"==": [{var: preferences.audience}, legal]}}
""")
    env = {k: v for k, v in os.environ.items() if k not in ("ERGON_USER", "ERGON_TOKEN")}
    env.update(ERGON_TOKEN=tokens["lea"])

    def create(data: dict) -> subprocess.CompletedProcess:
        path = tmp_path / "contract.json"
        path.write_text(json.dumps(data))
        return subprocess.run([sys.executable, "-m", "flows.cli", "submissions", "create", "contract_input",
                               "--file", str(path), "--json"], env=env, capture_output=True, text=True, timeout=120)

    finance = create({**CONTRACT, "preferences": {"audience": "finance"}})
    assert finance.returncode == 0, finance.stderr
    assert json.loads(finance.stdout)["started_runs"] == [] and runs_of("document_summary") == []

    legal = create(CONTRACT)
    assert legal.returncode == 0, legal.stderr
    made = json.loads(legal.stdout)
    (run_id,) = made["started_runs"]
    run = wait_for(lambda: (rs := runs_of("document_summary")) and rs[0].status in ("completed", "failed") and rs[0],
                   180, "the template run")
    assert run.id == run_id and len(runs_of("document_summary")) == 1
    assert (run.status, run.trigger, run.started_by) == ("completed", "on_submission_created", "intake-bot")
    assert run.input_submission_id == made["id"]
    assert run.context["input"] == CONTRACT


def test_the_schedules_list_shows_submission_triggers(store, definitions):
    (definitions / "forms").mkdir()
    for name, text in FORMS.items():
        (definitions / name).write_text(text)
    (definitions / "watcher.yaml").write_text(WATCHER)
    shutil.copy(REPO / "definitions" / "document_summary.yaml", definitions / "document_summary.yaml")
    with (definitions / "document_summary.yaml").open("a") as fh:
        fh.write("triggers:\n  - {type: on_submission_created, form: contract_input}\n")
    env = {**os.environ, "COLUMNS": "200", "PREFECT_API_URL": "http://127.0.0.1:9/api"}  # no Prefect needed
    result = subprocess.run([sys.executable, "-m", "flows.cli", "schedules", "list", "--json"], env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    rows = {r["name"]: (r["kind"], r["schedule"], r["as_user"]) for r in json.loads(result.stdout)["triggers"]}
    assert rows == {"document_summary:0": ("on_submission_created", "contract_input submission created", "ergon"),
                    "watcher:0": ("on_submission_updated", "key_points submission updated (filtered)", "form-bot")}


def test_the_schedules_page_shows_submission_triggers(store, definitions, monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    (definitions / "forms").mkdir()
    for name, text in FORMS.items():
        (definitions / name).write_text(text)
    (definitions / "watcher.yaml").write_text(WATCHER)
    at = AppTest.from_file(str(REPO / "ui" / "pages" / "schedules.py"), default_timeout=60).run()
    assert not at.exception
    table = at.dataframe[0].value
    assert list(table["trigger"]) == ["watcher · trigger 1 (a changed submission)"]
    assert list(table["when"]) == ["key_points submission updated (filtered)"]
    assert list(table["acts as"]) == ["form-bot"]
