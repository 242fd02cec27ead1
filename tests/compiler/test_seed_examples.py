"""The workflow-DSL examples of seed 002, verbatim (tests/fixtures/seed_examples/).

The DSL page's complete example checks clean once its child workflow exists (it runs:
tests/runtime/test_workflow_dsl.py). The intake workflow of the configuration page calls
activities of the Vertesia platform that Ergon does not have, and ``generateEmbeddings``, which
it does not run yet: the checker refuses each step by name, saying what to use instead — never
accepted and then failing at run time.
"""

from __future__ import annotations

from pathlib import Path

from compiler import check_workspace, load_workspace

SEEDS = Path(__file__).resolve().parents[1] / "fixtures" / "seed_examples"


def _errors(*paths: Path):
    return check_workspace(load_workspace(list(paths))).errors


def test_documents_without_kind_are_read_as_workflows():
    ws = load_workspace([SEEDS / "dsl_example_workflow.json"])
    assert [u.kind for u in ws.units] == ["workflow"]


def test_the_dsl_page_example_checks_clean_with_its_child_workflow(tmp_path):
    child = tmp_path / "child.yaml"
    child.write_text("kind: workflow\nname: My Child Workflow\nsteps:\n  - {name: log, params: {message: child}}\n")
    assert _errors(SEEDS / "dsl_example_workflow.json", child) == []


def test_the_intake_workflow_is_refused_step_by_step_with_what_to_use():
    errors = _errors(SEEDS / "intake_workflow.json")
    by_step = {d.path: (d.code, d.message, d.hint) for d in errors}
    assert len(errors) == 7 and {d.code for d in errors} == {"dsl-unsupported"}
    names = ["setDocumentStatus", "generateObjectText", "generateOrAssignContentType", "generateDocumentProperties",
             "chunkDocument", "generateEmbeddings", "setDocumentStatus"]
    for i, name in enumerate(names):
        code, message, hint = by_step[f"steps[{i}].name"]
        assert f"`{name}`" in message and "not available yet" in message and hint
    assert "updateDocument" in by_step["steps[0].name"][2]
    assert "search_documents" in by_step["steps[5].name"][2]
