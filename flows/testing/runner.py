"""Running test files: check them all, then run every case in this process on a temporary store.

:func:`run_tests` is what ``ergon test`` does, without printing:

1. collect the ``*.test.yaml`` files, load each (:mod:`flows.testing.spec`) and check it against
   the definitions folder (:mod:`flows.testing.checks`); a file with problems runs no case;
2. point the store at a fresh SQLite file in a temporary folder for the whole invocation
   (``ERGON_DATABASE_URL``, restored afterwards), so a test never reads or writes the project's
   runs, and every case still goes through the real store: visits, checkpoints, tasks;
3. run each case through the flow body every run executes (:func:`flows.execution.body.execute_alone`)
   with the in-process backend (:mod:`flows.testing.backend`) and the case's stand-ins
   (:mod:`flows.testing.doubles`), one asyncio loop for all cases, one case after the other; a
   case with ``prefect: true`` through the real Prefect flow instead (:mod:`flows.testing.on_prefect`),
   the Prefect API made ready first, only when a chosen case has it;
4. read what the run did back from the store — status, outcome, the route (top-level visits in
   order, a retried node once, nodes that never ran left out), the final context — and compare it with
   the case's ``expect`` (:mod:`flows.testing.compare`).

Interactions a case does not mock are answered by the model the run would use; with no
``ERGON_MODEL`` set that is the offline model, deterministic, so tests need no key.
"""

from __future__ import annotations

import asyncio
import fnmatch
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from compiler import Diagnostic, check_workspace, load_workspace
from compiler.plan import Plan
from flows import moments
from flows.catalog import Catalog, load_tools
from flows.execution.body import execute_alone
from flows.execution.request import RunRequest
from flows.settings import definitions_dir
from flows.stand_ins import STAND_INS
from flows.testing import on_prefect
from flows.testing.backend import AnsweringPauses, CasePaused, InProcessBackend
from flows.testing.checks import check_test_file
from flows.testing.compare import Actual, Difference, differences
from flows.testing.doubles import CaseDoubles
from flows.testing.spec import Case, LoadedTests, People, collect_files, load_test_file

#: Who the runs of test cases are recorded as started by.
STARTED_BY = "ergon-test"


@dataclass
class CaseResult:
    """One case: what its run did and how that differs from what the case expected."""

    file: str
    definition: str
    name: str
    actual: Actual
    differences: list[Difference]
    seconds: float
    #: the moves the run made between top-level nodes, in order (what coverage counts)
    moves: list[tuple[str, str]] = field(default_factory=list)
    #: the top-level pipeline nodes skipped because their ``when`` was false
    when_false: list[str] = field(default_factory=list)
    #: the case's run (in the invocation's temporary store)
    run_id: str | None = None
    #: its Prefect flow run, for a case with ``prefect: true`` (what is left of the run afterwards)
    prefect_flow_run_id: str | None = None

    @property
    def passed(self) -> bool:
        return not self.differences


@dataclass
class TestSession:
    """Everything one ``ergon test`` found and ran."""

    __test__ = False  # not a pytest class, whatever its name

    files: list[str] = field(default_factory=list)
    problems: list[Diagnostic] = field(default_factory=list)
    results: list[CaseResult] = field(default_factory=list)
    #: the Plans under test, by definition name (what coverage measures against)
    plans: dict[str, Plan] = field(default_factory=dict)
    #: the definitions folder as the cases ran against it (``--explore`` runs the same definitions)
    catalog: Catalog | None = None
    seconds: float = 0.0

    @property
    def failed(self) -> list[CaseResult]:
        return [r for r in self.results if not r.passed]

    def exit_code(self) -> int:
        """2: a test file is invalid; 1: a case failed; 0: every case passed."""
        return 2 if self.problems else 1 if self.failed else 0


def run_tests(paths: list[str | Path], *, pattern: str | None = None,
              on_result: Callable[[CaseResult], None] = lambda r: None) -> TestSession:
    """Check and run the test files under ``paths`` (see the module docstring). ``pattern`` keeps
    the cases whose name contains it or matches it as a glob; ``on_result`` hears each case as it ends."""
    started = time.perf_counter()
    files = collect_files(paths)
    session = TestSession(files=[str(f) for f in files])
    loaded = [load_test_file(f) for f in files]
    catalog = _catalog(loaded)
    session.catalog = catalog
    report = check_workspace(catalog.ws)
    runnable: list[tuple[LoadedTests, Plan]] = []
    for tests in loaded:
        plan, problems = check_test_file(tests, catalog.ws, lambda u: [d for d in report.errors if d.file == u.file])
        session.problems.extend(problems)
        if plan is not None and not problems:
            runnable.append((tests, plan))
            session.plans[plan.name] = plan
    chosen = [(t, p, c) for t, p in runnable for c in t.spec.cases if _chosen(c.name, pattern)]  # type: ignore[union-attr]
    if any(case.prefect for _, _, case in chosen):
        on_prefect.prepare()  # the API `ergon run` would use; the other cases never touch Prefect
    if chosen:
        with temporary_store():
            asyncio.run(_run_all(chosen, catalog, session, on_result))
    session.seconds = time.perf_counter() - started
    return session


def _chosen(name: str, pattern: str | None) -> bool:
    return pattern is None or pattern.lower() in name.lower() or fnmatch.fnmatch(name, pattern)


def _catalog(loaded: list[LoadedTests]) -> Catalog:
    """The definitions folder, plus the definition files test files name by path."""
    folder = definitions_dir()
    targets: list[Path] = [folder] if folder.is_dir() else []
    for tests in loaded:
        if tests.spec is None:
            continue
        for candidate in (Path(tests.file).parent / tests.spec.definition, Path(tests.spec.definition)):
            if candidate.suffix in (".yaml", ".yml", ".json") and candidate.is_file():
                targets.append(candidate)
                break
    ws = load_workspace(targets)
    load_tools(targets)
    return Catalog(ws, targets)


@contextmanager
def temporary_store() -> Iterator[str]:
    """A fresh store in a temporary folder for the duration (``ERGON_DATABASE_URL``, restored after)."""
    from flows.store.db import dispose_all, init_db

    before = os.environ.get("ERGON_DATABASE_URL")
    with tempfile.TemporaryDirectory(prefix="ergon-test-") as folder:
        url = f"sqlite:///{Path(folder) / 'store.db'}"
        os.environ["ERGON_DATABASE_URL"] = url
        try:
            init_db(url)
            yield url
        finally:
            if before is None:
                os.environ.pop("ERGON_DATABASE_URL", None)
            else:
                os.environ["ERGON_DATABASE_URL"] = before
            dispose_all()  # the folder goes away with its database: no pooled connection may outlive it


async def _run_all(chosen: list[tuple[LoadedTests, Plan, Case]], catalog: Catalog, session: TestSession,
                   on_result: Callable[[CaseResult], None]) -> None:
    for tests, plan, case in chosen:
        # its own task: the case's stand-ins are set in a copy of the context, seen by its run only
        result = await asyncio.create_task(run_case(tests.file, plan, case, catalog,
                                                    people=tests.spec.people_of(case)))  # type: ignore[union-attr]
        session.results.append(result)
        on_result(result)


async def run_case(file: str, plan: Plan, case: Case, catalog: Catalog, *, people: People | None = None) -> CaseResult:
    """Run one case on the current store and compare (see the module docstring); ``people``: who
    belongs to which groups (None: the person answering a task counts as a member of its group)."""
    started = time.perf_counter()
    doubles = CaseDoubles(case.mocks)
    STAND_INS.set(doubles)
    with moments.unannounced():  # a test's run tells no Prefect automation and starts no trigger
        return await _run_case(file, plan, case, catalog, doubles, started, people)


async def _run_case(file: str, plan: Plan, case: Case, catalog: Catalog, doubles: CaseDoubles,
                    started: float, people: People | None) -> CaseResult:
    from flows.store import definitions as definition_store
    from flows.store.ids import new_id

    run_id = new_id()
    request = RunRequest(run_id=run_id, trigger="manual", started_by=STARTED_BY, catalog=catalog,
                         content_hash=definition_store.snapshot_definition({"plan": plan.to_json()}))
    pauses = AnsweringPauses(dict(case.mocks.tasks), people)
    error: str | None
    flow_run: str | None = None
    try:
        if case.prefect:
            ended = await on_prefect.execute(plan, dict(case.inputs), request, pauses)
            status, outcome, context, error = ended.status, ended.outcome, ended.context, ended.error
            flow_run = ended.flow_run_id
        else:
            result = await execute_alone(plan, dict(case.inputs), request, InProcessBackend(pauses))
            status, outcome, context, error = result.status, result.outcome, result.context, result.error
    except CasePaused as paused:
        status, outcome, context, error = "paused", None, _context_of(run_id), str(paused)
    except Exception as exc:  # a fault of Ergon's own, recorded on the run by the body: the case fails, naming it
        status, outcome, context, error = "failed", None, _context_of(run_id), f"{type(exc).__name__}: {exc}"
    route, moves, when_false = _route(run_id)
    actual = Actual(status=status, outcome=outcome, route=route, context=context, calls=dict(doubles.calls), error=error,
                    refused=list(pauses.refused))
    return CaseResult(file, plan.name, case.name, actual, differences(case.expect, actual),
                      time.perf_counter() - started, moves, when_false, run_id, flow_run)


def _context_of(run_id: str) -> dict[str, Any]:
    """The context of a run that did not return (paused for a person): as its last checkpoint left it."""
    from flows.store import runs as run_store

    run = run_store.get_run(run_id)
    return dict(run.context or {}) if run is not None else {}


def _route(run_id: str) -> tuple[list[str], list[tuple[str, str]], list[str]]:
    """The top-level nodes the run visited, in order (a retried node's attempts once, nodes that
    never ran left out), the moves between them (a visit's recorded next node), and the pipeline
    nodes skipped because their ``when`` was false."""
    from flows.runtime.engine import WHEN_FALSE
    from flows.store import visits as visit_store

    route: list[str] = []
    moves: list[tuple[str, str]] = []
    when_false: list[str] = []
    for visit in visit_store.visits_for_run(run_id):
        if visit.parent_visit_id is None and visit.status == "skipped" and visit.error == WHEN_FALSE:
            when_false.append(visit.node_id)
        if visit.parent_visit_id is not None or not _ran(visit):
            continue
        if visit.attempt > 1 and route and route[-1] == visit.node_id:
            continue
        route.append(visit.node_id)
        if visit.next_node:
            moves.append((visit.node_id, visit.next_node))
    return route, moves, when_false


def _ran(visit: Any) -> bool:
    """Whether the node of ``visit`` ran. Not when it was skipped (its ``when`` false, a branch
    not taken), nor when a pipeline's failure left it unrun: the engine records those as
    ``failed`` visits with no error kind, where every failure of a node that ran has one."""
    if visit.status == "skipped":
        return False
    return not (visit.status == "failed" and visit.error_kind is None)
