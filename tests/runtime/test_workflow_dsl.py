"""The workflow DSL's run-time features (seed 002): fetch, projection, sleep, log, child steps."""

from __future__ import annotations

import uuid

import pytest

pytestmark = pytest.mark.prefect


@pytest.fixture
def doc():
    from flows import documents

    name = f"brief-{uuid.uuid4().hex[:8]}.md"
    return documents.create(name, "The quarterly brief: revenue grew.")


def test_projection_include_exclude_and_nested_paths(run_def):
    text = """
kind: workflow
name: wf_projection
steps:
  - name: echo
    params:
      value: {name: n, description: d, secret: s, owner: {email: e, phone: p}}
    projection: {$include: [name, description, owner.email]}
    output: kept
  - name: echo
    params: {value: "${kept}"}
    projection: {$exclude: [description, owner.email]}
    output: dropped
"""
    result = run_def({"wf.yaml": text}, "wf_projection")
    assert result["status"] == "completed", result
    assert result["context"]["kept"] == {"name": "n", "description": "d", "owner": {"email": "e"}}
    assert result["context"]["dropped"] == {"name": "n", "owner": {}}


def test_fetch_binds_the_document_for_the_step_and_select_limit_apply(run_def, doc):
    text = """
kind: workflow
name: wf_fetch
input_schema: {type: object, properties: {documentId: {type: string}, docName: {type: string}}}
steps:
  - name: echo
    fetch:
      type: document
      query: {id: "${documentId}"}
      select: [id, name, content]
    params: {value: "${fetched}"}
    output: document
  - name: echo
    fetch: {type: document, query: {name: "${docName}"}, select: [id], limit: 1}
    params: {value: "${fetched}"}
    output: byName
  - name: echo
    fetch: {type: document, query: {id: no-such-document}, on_not_found: ignore}
    params: {value: "${fetched}"}
    output: missing
"""
    result = run_def({"wf.yaml": text}, "wf_fetch", {"documentId": doc["id"], "docName": doc["name"]})
    assert result["status"] == "completed", result
    ctx = result["context"]
    assert ctx["document"] == {"id": doc["id"], "name": doc["name"], "content": "The quarterly brief: revenue grew."}
    assert ctx["byName"] == [{"id": doc["id"]}]
    assert ctx["missing"] is None


def test_fetch_not_found_fails_the_step_by_default(run_def):
    text = """
kind: workflow
name: wf_fetch_missing
steps:
  - name: echo
    fetch: {type: document, query: {id: no-such-document}}
    params: {value: "${fetched}"}
"""
    result = run_def({"wf.yaml": text}, "wf_fetch_missing")
    assert result["status"] == "failed"
    assert "fetch found nothing" in result["error"] or "no-such-document" in str(result), result


def test_sleep_takes_the_documented_duration_and_log_logs_the_message(run_def):
    text = """
kind: workflow
name: wf_sleep_log
vars: {myVariable: Hello World!}
steps:
  - name: sleep
    params: {duration: 0.2}
    output: slept
  - type: activity
    name: log
    params: {message: "The value of myVariable is: ${myVariable}"}
    output: logged
"""
    result = run_def({"wf.yaml": text}, "wf_sleep_log")
    assert result["status"] == "completed", result
    assert result["context"]["slept"] == {"slept": 0.2}
    assert result["context"]["logged"] == {"logged": "The value of myVariable is: Hello World!"}


def test_a_child_step_runs_a_process_or_a_workflow_as_a_sub_process(run_def):
    files = {
        "child_process.yaml": """
kind: process
format_version: 1
process: child_process
context:
  schema:
    type: object
    properties: {value: {type: integer}, counter: {type: integer}}
    required: [value]
initial: inc
nodes:
  inc: {type: tool, tool: increment, input: {value: "{{value}}"}, writes: [counter], transitions: [{to: done}]}
  done: {type: final}
""",
        "child_wf.yaml": """
kind: workflow
name: child_wf
input_schema: {type: object, properties: {value: {type: integer}}}
steps:
  - {name: increment, params: {value: "${value}"}, output: bumped}
""",
        "parent.yaml": """
kind: workflow
name: parent_wf
steps:
  - {type: workflow, name: child_process, params: {value: 1}, output: fromProcess}
  - {type: workflow, name: child_wf, params: {value: 5}, output: fromWorkflow}
""",
    }
    result = run_def(files, "parent_wf")
    assert result["status"] == "completed", result
    assert result["context"]["fromProcess"]["counter"] == 2
    assert result["context"]["fromWorkflow"]["bumped"] == {"counter": 6}


def test_execute_interaction_and_text_activities_run_in_a_workflow(run_def, doc, monkeypatch):
    monkeypatch.delenv("ERGON_MODEL", raising=False)
    files = {
        "shout.yaml": """
kind: interaction
name: shout
input_schema: {type: object, properties: {text: {type: string}}, required: [text]}
result_schema: {type: object, properties: {loud: {type: string}}, required: [loud]}
prompts:
  - {role: user, template: "Say this loudly: {{ text }}"}
""",
        "wf.yaml": """
kind: workflow
name: wf_activities
input_schema: {type: object, properties: {documentId: {type: string}}, required: [documentId]}
steps:
  - {name: extractText, params: {document: "${documentId}"}, output: extracted}
  - {name: executeInteraction, params: {interaction: shout, data: {text: "${extracted.text}"}}, output: shouted}
  - {name: analyzeSentiment, params: {text: "${extracted.text}"}, output: mood}
  - {name: translateText, params: {text: "${extracted.text}", targetLanguage: French}, output: french}
  - {name: createDocument, params: {type: Note, properties: {name: "note-${documentId}", mood: "${mood.sentiment}"}}, output: created}
  - {name: deleteDocument, params: {document: "${created.document}"}}
""",
    }
    result = run_def(files, "wf_activities", {"documentId": doc["id"]})
    assert result["status"] == "completed", result
    ctx = result["context"]
    assert ctx["extracted"] == {"text": "The quarterly brief: revenue grew.", "hasText": True}
    assert isinstance(ctx["shouted"]["result"]["loud"], str)
    assert ctx["mood"]["sentiment"] in {"positive", "negative", "neutral", "mixed"}
    assert isinstance(ctx["french"]["translatedText"], str)
    assert ctx["created"]["document"]["properties"]["mood"] == ctx["mood"]["sentiment"]


def test_the_dsl_page_example_runs_verbatim_with_its_async_child(run_def):
    from pathlib import Path

    seed = Path(__file__).parents[1] / "fixtures" / "seed_examples" / "dsl_example_workflow.json"
    files = {
        "my_workflow.json": seed.read_text(encoding="utf-8"),
        "child.yaml": "kind: workflow\nname: My Child Workflow\nsteps:\n  - {name: log, params: {message: child}, output: said}\n",
    }
    result = run_def(files, "My Workflow")
    assert result["status"] == "completed", result
    assert result["context"]["childWorkflowResult"]["said"] == {"logged": "child"}
