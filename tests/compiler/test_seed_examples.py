"""The complete process and workflow examples of seed 002, verbatim (tests/fixtures/seed_examples/).

Each example's ``NAME.expected`` lists what the checker says of it alone (see the folder's
README). The DSL page's complete example checks clean once its child workflow exists (it runs:
tests/runtime/test_workflow_dsl.py). The intake workflow of the configuration page calls
activities of the Vertesia platform that Ergon does not have, and ``generateEmbeddings`` on the
platform's "current document", which Ergon has not: the checker refuses each step, saying what to
use instead — never accepted and then failing at run time.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_golden import parse_expected_file

from compiler import check_workspace, load_workspace

SEEDS = Path(__file__).resolve().parents[1] / "fixtures" / "seed_examples"
EXAMPLES = sorted(SEEDS.glob("*.json"))


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_each_seed_example_gives_exactly_its_expected_diagnostics(path: Path):
    expected_file = path.with_suffix(".expected")
    assert expected_file.is_file(), f"{path.name} has no {expected_file.name}"
    expected = {(code, line, col) for _, code, line, col in parse_expected_file(expected_file)}
    actual = {(d.code, d.line, d.col) for d in check_workspace(load_workspace([path])).diagnostics}
    assert actual == expected, "\n".join(d.format() for d in check_workspace(load_workspace([path])).diagnostics)


def test_the_corpus_holds_every_complete_example_of_the_pages():
    # the six complete JSON examples of the DSL pages, the tutorial assembled from its steps
    assert len(EXAMPLES) == 7


def test_a_bare_steps_document_is_a_workflow_named_after_its_file():
    ws = load_workspace([SEEDS / "dsl_variables_log.json"])
    assert [(u.kind, u.name) for u in ws.units] == [("workflow", "dsl_variables_log")]
    [finding] = check_workspace(ws).errors
    assert "myVariable" in finding.message and "vars" in (finding.hint or "")


def test_the_tutorial_keeps_its_legal_notes_finding():
    [finding] = check_workspace(load_workspace([SEEDS / "contract_review_tutorial.json"])).errors
    assert finding.code == "maybe-unset" and "legal_notes" in finding.message
    assert "auto_approve" in finding.message  # the path that never sets it


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
    assert len(errors) == 7
    names = {0: "setDocumentStatus", 1: "generateObjectText", 2: "generateOrAssignContentType",
             3: "generateDocumentProperties", 4: "chunkDocument", 6: "setDocumentStatus"}
    for i, name in names.items():
        code, message, hint = by_step[f"steps[{i}].name"]
        assert code == "dsl-unsupported" and f"`{name}`" in message and "not available yet" in message and hint
    assert "updateDocument" in by_step["steps[0].name"][2]
    # generateEmbeddings runs, but on the document it is given: the seed's step names none
    code, message, hint = by_step["steps[5].params"]
    assert code == "tool-params" and "`text`" in message and "`document`" in message
    assert "no current document" in hint
