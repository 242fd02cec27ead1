"""A definition whose run would load a broken one does not check clean, nor start.

A process calling an interaction whose prompt does not parse used to pass ``ergon check
process.yaml`` (the folder around the file is context, not reported on) and ``ergon run``, and
then failed at the interaction node. Now the reference itself is refused (``broken-reference``),
quoting the first error of the definition it names, directly or through the ones that one loads.
The golden fixture ``tests/fixtures/invalid/broken_reference/`` covers the folder check.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from compiler import check_workspace, workspace_from_texts
from flows import cli, runs

BROKEN_INTERACTION = """\
kind: interaction
name: Greet
prompts:
  - role: user
    template: "Hello {{ who }"
input_schema: {type: object, properties: {who: {type: string}}, required: [who]}
result_schema: {type: object, properties: {greeting: {type: string}}, required: [greeting]}
"""

CALLER = """\
format_version: 1
kind: process
process: hello
initial: greet
context:
  schema:
    type: object
    properties:
      who: {type: string}
      greeting: {type: string}
  initial: {who: world}
nodes:
  greet:
    type: interaction
    interaction: Greet
    input: {who: "{{ who }}"}
    writes: [greeting]
    transitions: [{to: done}]
  done:
    type: final
"""


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "interactions").mkdir()
    (tmp_path / "interactions" / "greet.yaml").write_text(BROKEN_INTERACTION)
    (tmp_path / "hello.yaml").write_text(CALLER)
    return tmp_path


def test_checking_the_caller_alone_reports_the_broken_interaction(folder: Path, capsys) -> None:
    assert cli.run(["check", str(folder / "hello.yaml")]) == 1
    printed = capsys.readouterr().out
    assert f"{folder / 'hello.yaml'}:15:18: error[broken-reference] nodes.greet.interaction: interaction `Greet` " \
           f"has errors: {folder / 'interactions' / 'greet.yaml'}:5:15: template does not parse" in printed
    assert "template-syntax" not in printed, "the interaction's own diagnostics are its file's, not reported here"


def test_a_run_of_the_caller_is_refused_before_anything_is_recorded(folder: Path) -> None:
    with pytest.raises(runs.StartRefused) as refused:
        runs.compile_definition(str(folder / "hello.yaml"))
    assert [(p.code, p.path, p.line) for p in refused.value.problems] == [
        ("broken-reference", "nodes.greet.interaction", 15)]


def test_a_clean_callee_leaves_the_caller_clean(folder: Path, capsys) -> None:
    (folder / "interactions" / "greet.yaml").write_text(BROKEN_INTERACTION.replace("{{ who }", "{{ who }}"))
    assert cli.run(["check", str(folder / "hello.yaml")]) == 0
    assert runs.compile_definition(str(folder / "hello.yaml")).plan.name == "hello"


FORMS = {p.name: p.read_text() for p in (Path(__file__).parents[2] / "definitions" / "forms").glob("*.yaml")}

BROKEN_FORM = """\
kind: form
name: verdict
groups:
  - name: verdict
    fields:
      - {name: outcome, type: select}
"""

TEMPLATE = """\
kind: template
name: judge
input_form: contract_input
steps:
  - key: decide
    prompt: "Judge {{ input.document.document_text }}"
    output_key: verdict
    output_form: verdict
"""

WORKFLOW = """\
kind: workflow
name: wf
steps:
  - name: executeInteraction
    params: {interaction: Greet, data: {who: x}}
  - type: workflow
    name: judge
"""


def test_templates_and_workflows_are_refused_through_what_they_load() -> None:
    ws = workspace_from_texts({**FORMS, "verdict.yaml": BROKEN_FORM, "greet.yaml": BROKEN_INTERACTION,
                               "judge.yaml": TEMPLATE, "wf.yaml": WORKFLOW}, tools=["executeInteraction"])
    found = sorted((Path(d.file).name, d.path, d.message.split(": ")[0]) for d in check_workspace(ws).errors
                   if d.code == "broken-reference")
    assert found == [
        ("judge.yaml", "steps[0].output_form", "form `verdict` has errors"),
        ("wf.yaml", "steps[0].params.interaction", "interaction `Greet` has errors"),
        ("wf.yaml", "steps[1].name", "process `judge` loads form `verdict`, which has errors"),
    ]


def test_a_cycle_of_sub_processes_ends_and_is_reported_once_as_a_cycle() -> None:
    def calls(name: str, child: str) -> str:
        return (f"format_version: 1\nkind: process\nprocess: {name}\ninitial: call\nnodes:\n"
                f"  call: {{type: process, process: {child}, transitions: [{{to: done}}]}}\n  done: {{type: final}}\n")

    ws = workspace_from_texts({"a.yaml": calls("a", "b"), "b.yaml": calls("b", "a")})
    assert sorted((Path(d.file).name, d.code) for d in check_workspace(ws).errors) == [
        ("a.yaml", "process-cycle"), ("b.yaml", "process-cycle")]
