"""The promise of ``ergon check``, as a property: a definition it passes runs as written.

For every runnable definition (process, pipeline, template, workflow) under ``definitions/`` and
every valid golden fixture the compiler's tests use (the seed examples of
tests/fixtures/seed_examples/ that check clean — the DSL page's example workflow with its child;
the ``mini_review`` process of tests/compiler/mini_process.py, whose Plan is snapshot-tested),
hypothesis draws examples; each example is one real run on the
local Prefect server and the real store, on the offline model:

* **inputs** are drawn from the definition's run-input schema by hypothesis-jsonschema (required
  fields, types, formats and bounds as written; ``format: document`` as a document id). A string
  field that the schema leaves free (no enum, format or pattern) takes, three times in four, a
  word of the corpus's *dictionary* instead, as fuzzers seed their inputs with the constants of
  the program under test: the strings of the literal tables of the corpus's Python tools (its
  currency table, its sanctions list…) and the ids of the documents it ships — a word is used
  only where the field's schema accepts it. Without it, a field such as
  ``currency: {type: string}`` would only ever get strings no tool knows, and every route behind
  that tool would stay untaken;
* **the world** is drawn too: the document store holds the corpus's shipped documents and, for
  each other string input that can be a document id, maybe a document by that id with a drawn
  text (empty one time in four: "no text" is a route of its own);
* **the model** is the offline model with ``ERGON_OFFLINE_SEED`` drawn per example, so its
  ``_next_node`` choices, enum values and numbers differ from run to run (flows/llm/offline.py);
* **people**: every human task the run (or a child run) opens is answered with a value drawn
  from the task's own fields (selects among their options, ``_next_node`` of ``trigger: user``
  exits included), through ``ergon tasks answer`` — the CLI command's own function, so the answer
  is parsed, validated, recorded and resumes the run exactly as it does for a person — until the
  run ends.

Then every run of the example (the run and its child runs) is classified by what the store
recorded, never by message text: a run must end ``completed`` (a process at one of its ``final``
nodes, with a context valid against its schema), or ``failed`` with a failure of the *world*
(``error_kind = world``: a tool raised, a document is missing, a budget ran out). Any visit or run
that failed with another kind — ``definition`` (a template read a missing field, a write was
refused, no transition matched, an unknown tool, arguments or inputs that do not fit), ``model``
(the offline model always answers to the schema it is given, so that is the definition's schema
being unanswerable) or ``internal`` — is a soundness bug: the checker should have refused the
definition, or the runtime should have done what it says.

The routes each definition's runs took are counted against the edges of its Plan; the table is
printed at the end of the session (soundness_report.py, conftest.py).

The budget is fixed for CI: ``ERGON_SOUNDNESS_EXAMPLES`` examples per definition (default 10),
derandomized and without an example database, so every CI run draws the same examples; raise the
variable for a longer local run (``ERGON_SOUNDNESS_SHRINK=1`` also shrinks a failing example,
which costs many more runs).
"""

from __future__ import annotations

import ast
import os
import re
import runpy
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import soundness_report
from soundness_runs import classify, draw_inputs, execute, run_tree
from compiler import check_workspace, load_workspace
from compiler.plan import RUNNABLE_KINDS, Plan

pytestmark = pytest.mark.prefect

ROOT = Path(__file__).resolve().parents[2]
DEFINITIONS = ROOT / "definitions"
SEED_WORKFLOW = ROOT / "tests" / "fixtures" / "seed_examples" / "dsl_example_workflow.json"
MINI_PROCESS = ROOT / "tests" / "compiler" / "mini_process.py"
#: the child the DSL page's example starts (as tests/compiler/test_seed_examples.py writes it)
SEED_CHILD = "kind: workflow\nname: My Child Workflow\nsteps:\n  - {name: log, params: {message: child}}\n"

EXAMPLES = int(os.environ.get("ERGON_SOUNDNESS_EXAMPLES") or 10)
SHRINK = os.environ.get("ERGON_SOUNDNESS_SHRINK") == "1"
#: who answers the tasks: an admin, so that every task is theirs to answer (and never the starter)
ANSWERER = "soundness-checker"
DOCUMENT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def _expects_nothing(expected: Path) -> bool:
    lines = [ln.strip() for ln in expected.read_text(encoding="utf-8").splitlines()]
    return not [ln for ln in lines if ln and not ln.startswith("#")]


def _fixture_files() -> dict[str, str]:
    """The golden valid fixtures, as files to add to a copy of ``definitions/``: the seed examples
    that check clean alone (an empty ``.expected``), the DSL page's example with its child, and
    the compiler tests' ``mini_review``."""
    mini = runpy.run_path(str(MINI_PROCESS))
    files = {
        f"seed_{p.name}": p.read_text(encoding="utf-8") for p in sorted(SEED_WORKFLOW.parent.glob("*.*"))
        if p.suffix in (".json", ".yaml", ".yml") and p.with_suffix(".expected").is_file()
        and _expects_nothing(p.with_suffix(".expected"))
    }
    files.update({
        "seed_dsl_example_workflow.json": SEED_WORKFLOW.read_text(encoding="utf-8"),
        "seed_my_child_workflow.yaml": SEED_CHILD,
        "mini_review.yaml": mini["MINI_PROCESS"],
        "mini_summarize.yaml": mini["MINI_INTERACTION"],
    })
    return files


def _dictionary(folder: Path) -> list[str]:
    """The corpus's words (see the module docstring): the ids of its shipped documents, and the
    strings of the literal tables of its Python tools — keys of dict literals whose entries are
    all constants, elements of set, list and tuple literals of constants (a rates table, a list of
    countries), not the incidental strings of messages and return values."""
    words: set[str] = {p.stem for p in (folder / "documents").glob("*.txt")}

    def constant(node: ast.AST | None) -> bool:
        return isinstance(node, ast.Constant)

    for source in sorted((folder / "tools").glob("*.py")):
        for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
            members: list[ast.AST | None] = []
            if isinstance(node, ast.Dict) and all(map(constant, [*node.keys, *node.values])):
                members = list(node.keys)
            elif isinstance(node, (ast.Set, ast.List, ast.Tuple)) and node.elts and all(map(constant, node.elts)):
                members = list(node.elts)
            for m in members:
                value = m.value if isinstance(m, ast.Constant) else None
                if isinstance(value, str) and value.strip() and len(value) <= 40 and "\n" not in value:
                    words.add(value)
    return sorted(words)


def _corpus(folder: Path) -> Path:
    shutil.copytree(DEFINITIONS, folder, ignore=shutil.ignore_patterns("__pycache__"))
    for name, text in _fixture_files().items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def _runnable_names() -> list[str]:
    """Every runnable definition of the corpus (read at collection: the compiler alone, no run)."""
    scratch = Path(tempfile.mkdtemp(prefix="ergon-soundness-"))
    try:
        ws = load_workspace([_corpus(scratch / "definitions")])
        return sorted(ws.named(*RUNNABLE_KINDS))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


NAMES = _runnable_names()


# --------------------------------------------------------------------------------------------
# Fixtures: one store and one copy of the corpus per definition (shared by its examples)


@pytest.fixture
def corpus(tmp_path, monkeypatch, prefect_api, store):
    from flows import documents, people, tokens

    folder = _corpus(tmp_path / "definitions")
    for shipped in sorted((folder / "documents").glob("*.txt")):
        documents.add(shipped, id=shipped.stem, replace=True)
    monkeypatch.setenv("ERGON_DEFINITIONS", str(folder))
    monkeypatch.delenv("ERGON_MODEL", raising=False)
    people.add_user(ANSWERER, admin=True)
    monkeypatch.setenv("ERGON_TOKEN", tokens.create(ANSWERER).token)  # how `ergon tasks answer` proves who answers
    report = check_workspace(load_workspace([folder]))
    assert not report.errors, "the corpus must check clean:\n" + "\n".join(d.format() for d in report.errors)
    return folder


# --------------------------------------------------------------------------------------------
# One example: stock the world, run, answer, classify


def _stock_documents(data: st.DataObject, inputs: dict[str, Any], shipped: set[str]) -> None:
    from flows import documents

    for value in inputs.values():
        if not isinstance(value, str) or not DOCUMENT_ID.match(value) or ".." in value or value in shipped:
            continue
        try:
            documents.delete(value)
        except documents.DocumentError:
            pass
        if data.draw(st.integers(0, 3), label=f"document {value!r} exists") > 0:
            # an empty document one time in four: "no text" is a route of its own (hasText)
            empty = data.draw(st.integers(0, 3), label=f"document {value!r} is empty") == 0
            text = "" if empty else data.draw(st.text(max_size=200), label=f"text of document {value!r}")
            documents.create(f"{value}.txt", text, id=value)


def _routes(plan: Plan) -> set[tuple[str, str]]:
    return {(e.source, e.target) for e in plan.edges}


def _taken(plan: Plan, visits: list[Any]) -> set[tuple[str, str]]:
    """The moves a run made: a state machine's visit → its next node; a pipeline's `needs` edge
    when its node ran after the need was settled (done, or skipped: a lowered workflow step runs
    after a skipped one)."""
    top = [v for v in visits if v.parent_visit_id is None]
    if plan.control == "state_machine":
        return {(v.node_id, v.next_node) for v in top if v.status == "completed" and v.next_node}
    done = {v.node_id for v in top if v.status == "completed"}
    settled = done | {v.node_id for v in top if v.status == "skipped"}
    return {(s, t) for s, t in _routes(plan) if s in settled and t in done}


def _check(root_id: str, catalog: Any, root: Plan) -> list[str]:
    from flows.store import visits as visit_store

    problems = []
    for run in run_tree(root_id):
        try:
            plan = root if run.id == root_id else catalog.resolve(run.definition_name)
        except Exception:  # noqa: BLE001 - an inline child has no name to resolve
            plan = None
        visits = list(visit_store.visits_for_run(run.id))
        end, found = classify(run, plan, visits)
        problems += found
        if plan is not None:
            entry = soundness_report.definition(run.definition_name, _routes(plan))
            entry.runs += 1
            entry.ends[end] += 1
            entry.taken |= _taken(plan, visits)
    return problems


# --------------------------------------------------------------------------------------------
# The property


@pytest.mark.parametrize("name", NAMES)
def test_a_definition_that_checks_clean_runs_as_written(name, corpus, request):
    from flows.catalog import Catalog
    from flows.llm.offline import SEED_ENV
    from flows.execution.inputs import validate_inputs

    catalog = Catalog.load()
    compiled = catalog.compile(name)
    plan = compiled.plan
    soundness_report.definition(name, _routes(plan))
    words = _dictionary(corpus)
    shipped = {p.stem for p in (corpus / "documents").glob("*.txt")}

    @settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
              phases=[Phase.explicit, Phase.generate, *([Phase.shrink] if SHRINK else [])],
              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                     HealthCheck.data_too_large])
    @given(data=st.data())
    def one_run(data: st.DataObject) -> None:
        inputs = draw_inputs(data, plan, words)
        refused = validate_inputs(plan, inputs)
        assert not refused, f"inputs drawn from {name}'s own input schema were refused: {[d.message for d in refused]}"
        _stock_documents(data, inputs, shipped)
        os.environ[SEED_ENV] = str(data.draw(st.integers(0, 2**32 - 1), label="offline model seed"))
        try:
            root_id, problems = execute(data, compiled, catalog, inputs)
        finally:
            os.environ.pop(SEED_ENV, None)
        problems += _check(root_id, catalog, plan)
        assert not problems, "checks clean, but did not run as written:\n  " + "\n  ".join(problems)

    with soundness_report.Timer(request.node.nodeid):
        one_run()
