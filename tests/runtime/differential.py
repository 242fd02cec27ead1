"""The differential soundness property on one generated folder: check it, then run what passes.

Shared by ``test_generated_definitions.py`` (the CI budget) and ``benchmarks/soundness.py`` (the
large run). For one :class:`definition_generator.Generated` folder, :func:`differential`:

1. writes it into a fresh folder and points ``ERGON_DEFINITIONS`` at it, as a user's project
   (the document store holds ``doc-1``, put back before each run);
2. checks it as ``ergon check`` does (:func:`compiler.check_workspace` over the folder);
3. when ``gen_main`` checks clean, runs it as ``ergon run`` does — the catalog loaded from the
   folder (its tools imported), the run created and started (:func:`soundness_runs.execute`) on
   the offline model with a drawn ``ERGON_OFFLINE_SEED``, every human task answered with a drawn
   answer — and classifies every run of the tree (:func:`soundness_runs.classify`): any failure
   that is not the world's is a **problem**, a checker or runtime bug;
4. when the folder chains ``gen_next`` after ``gen_main`` (an ``on_complete`` trigger) and the
   run completed, computes the chained start's inputs the way the trigger does
   (:func:`flows.triggers.chaining.chained_inputs`) and starts ``gen_next`` with them in this
   process (``ERGON_CHAIN_MAX_DEPTH=0`` stops the trigger's own background start): a start the
   inputs refuse is a problem too — the checker passed a ``map`` that can never work;
5. when ``gen_main`` was refused *only* for a field that may be unset (``maybe-unset``) or an
   exit that may be missed (``no-fallback``), runs it anyway, to measure the checker's
   precision: a refusal whose run then ended without any failure is counted as *not shown*.
   (One run cannot prove the refusal wrong — another input may take the path — so this is a
   report, never an assertion.)
"""

from __future__ import annotations

import os
import shutil
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from definition_generator import WORDS, Generated
from soundness_runs import classify, draw_inputs, execute, run_tree

#: the document every folder may read (`doc-1`): put back before each run, as a run may change it
DOCUMENT_ID = "doc-1"
DOCUMENT_TEXT = "The first document: twelve words of plain text for the runs to read."

#: refusals whose precision is measured (step 5 of the module docstring)
IMPRECISE_CODES = frozenset({"maybe-unset", "no-fallback"})


@dataclass
class Outcome:
    """What one folder came to."""

    refused: set[str] = field(default_factory=set)  # diagnostic codes of gen_main's folder
    ends: list[str] = field(default_factory=list)  # how each run of the tree ended
    problems: list[str] = field(default_factory=list)  # soundness bugs
    precision: str | None = None  # for a refusal only for IMPRECISE_CODES: "shown" / "not shown"


@dataclass
class Tally:
    """Counts over many folders (printed by the test session and the benchmark)."""

    folders: int = 0
    clean: int = 0
    refused_by: Counter = field(default_factory=Counter)
    ends: Counter = field(default_factory=Counter)
    kinds: Counter = field(default_factory=Counter)  # generated main kind → folders
    problems: list[str] = field(default_factory=list)
    precision: Counter = field(default_factory=Counter)

    def add(self, generated: Generated, outcome: Outcome) -> None:
        self.folders += 1
        self.kinds[_main_kind(generated)] += 1
        if not outcome.refused:
            self.clean += 1
        for code in outcome.refused:
            self.refused_by[code] += 1
        for end in outcome.ends:
            self.ends[end.split(" at ")[0].split(":")[0]] += 1
        if outcome.precision:
            self.precision[outcome.precision] += 1
        self.problems += outcome.problems

    def lines(self) -> list[str]:
        if not self.folders:
            return []
        out = [f"generated folders: {self.folders} ({', '.join(f'{k} {v}' for k, v in sorted(self.kinds.items()))}); "
               f"checked clean: {self.clean}; refused: {self.folders - self.clean}",
               "refused by code (a folder counts under each of its codes): "
               + ", ".join(f"{c} {n}" for c, n in self.refused_by.most_common()),
               "runs by end: " + ", ".join(f"{e} {n}" for e, n in self.ends.most_common()),
               f"definition errors after a clean check: {len(self.problems)}"]
        shown, not_shown = self.precision["shown"], self.precision["not shown"]
        if shown + not_shown:
            out.append(f"precision of maybe-unset/no-fallback: {shown + not_shown} folders refused only for them, run anyway: "
                       f"{shown} failed as refused, {not_shown} ran without a failure in their one run")
        return out


#: what the test session's generated folders came to (printed at its end by conftest.py)
GENERATED = Tally()


def _main_kind(generated: Generated) -> str:
    text = generated.files.get("gen_main.yaml", "")
    if "format_version" in text:
        return "process"
    return "pipeline" if text.startswith("kind: pipeline") else "workflow"


def write(generated: Generated, folder: Path) -> Path:
    shutil.rmtree(folder, ignore_errors=True)
    for name, text in generated.files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return folder


def stock_document(scratch: Path) -> None:
    """``doc-1`` with its text, whatever an earlier run (or another test of the session) did to it."""
    from flows import documents

    source = scratch / f"{DOCUMENT_ID}.txt"
    source.parent.mkdir(parents=True, exist_ok=True)
    source.write_text(DOCUMENT_TEXT, encoding="utf-8")
    documents.add(source, id=DOCUMENT_ID, replace=True)


def differential(generated: Generated, data: st.DataObject, folder: Path) -> Outcome:
    """Steps 1–5 of the module docstring for one folder."""
    from compiler import check_workspace, load_workspace
    from compiler.plan import build_plan
    from flows.catalog import Catalog, Compiled
    from flows.runs import StartRefused

    write(generated, folder)
    outcome = Outcome()
    report = check_workspace(load_workspace([folder]))
    outcome.refused = {d.code for d in report.errors}
    runnable = not outcome.refused
    measuring = bool(outcome.refused) and outcome.refused <= IMPRECISE_CODES
    if not (runnable or measuring):
        return outcome
    stock_document(folder.parent)
    previous = os.environ.get("ERGON_DEFINITIONS")
    os.environ["ERGON_DEFINITIONS"] = str(folder)
    try:
        catalog = Catalog.load()
        if runnable:
            compiled = catalog.compile(generated.main)
        else:  # refused: build the Plan the checker would not give (step 5)
            unit = catalog.unit_for(generated.main)
            compiled = Compiled(plan=build_plan(unit, catalog.ws), content=unit.data or {}, unit=unit)
        inputs = draw_inputs(data, compiled.plan, list(WORDS))
        try:
            root_id, problems = _run(data, compiled, catalog, inputs)
        except StartRefused as exc:
            if runnable:
                outcome.problems.append(f"{generated.main}: inputs drawn from its own input schema were refused: {exc}")
            else:
                outcome.precision = "shown"
            return outcome
        ends, found = _classified(root_id, catalog, compiled.plan)
        if runnable:
            outcome.ends, outcome.problems = ends, problems + found
            if generated.chained and not outcome.problems:
                outcome.problems += _chain(data, catalog, generated, root_id, outcome)
        else:
            outcome.precision = "shown" if problems or found else "not shown"
    finally:
        if previous is None:
            os.environ.pop("ERGON_DEFINITIONS", None)
        else:
            os.environ["ERGON_DEFINITIONS"] = previous
    return outcome


def _run(data: st.DataObject, compiled: Any, catalog: Any, inputs: dict[str, Any], **start: Any) -> tuple[str, list[str]]:
    from flows.llm.offline import SEED_ENV

    os.environ[SEED_ENV] = str(data.draw(st.integers(0, 2**32 - 1), label="offline model seed"))
    try:
        return execute(data, compiled, catalog, inputs, **start)
    finally:
        os.environ.pop(SEED_ENV, None)


def _classified(root_id: str, catalog: Any, root: Any) -> tuple[list[str], list[str]]:
    from flows.store import visits as visit_store

    ends, problems = [], []
    for run in run_tree(root_id):
        try:
            plan = root if run.id == root_id else catalog.resolve(run.definition_name)
        except Exception:  # noqa: BLE001 - an inline child has no name to resolve
            plan = None
        end, found = classify(run, plan, list(visit_store.visits_for_run(run.id)))
        ends.append(end)
        problems += found
    return ends, problems


def _chain(data: st.DataObject, catalog: Any, generated: Generated, root_id: str, outcome: Outcome) -> list[str]:
    """Step 4 of the module docstring."""
    from flows.runs import StartRefused
    from flows.store import runs as run_store
    from flows.triggers.chaining import chained_inputs, waiting_on

    root = run_store.require_run(root_id)
    if root.status != "completed":
        return []
    problems = []
    for ref in waiting_on(catalog, generated.main):
        if ref.trigger.outcomes and root.outcome not in ref.trigger.outcomes:
            continue
        try:
            inputs = chained_inputs(ref, root.context or {})
        except Exception as exc:  # noqa: BLE001 - a map the trigger cannot render is the finding
            problems.append(f"{ref.definition}: its on_complete map cannot be rendered over {generated.main}'s context: {exc}")
            continue
        compiled = catalog.compile(ref.definition)
        try:
            child_id, found = _run(data, compiled, catalog, inputs, trigger="on_complete")
        except StartRefused as exc:
            problems.append(f"{ref.definition}: the chained start after {generated.main} was refused: {exc}")
            continue
        ends, more = _classified(child_id, catalog, compiled.plan)
        outcome.ends += ends
        problems += found + more
    return problems
