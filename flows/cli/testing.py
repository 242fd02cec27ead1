"""The `test` command: run the ``*.test.yaml`` tests of definitions and say what differs.

Output: one ``PASS``/``FAIL`` line per case, and under a failed case each difference — the
status or outcome, where the route parted from the expected one, each context key with both
values, each call count. Problems of test files are printed as ``ergon check`` prints
diagnostics. Exit status 0 when every case passed, 1 when one failed, 2 when a test file is
invalid or none was found. ``--explore N`` then runs N generated inputs through each definition
under test (:mod:`flows.testing.explore`) and prints every run that failed with a ``definition``
or ``internal`` error, with its inputs and the seed that replays it; any such run exits 1.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Annotated, Any

from cyclopts import Parameter
from rich.markup import escape

from flows.cli.output import diagnostics, err, error, out
from flows.heap import heavy_imports

DEFAULT_DIR = "definitions/tests"


def test(
    *paths: str,
    k: Annotated[str | None, Parameter(name="-k")] = None,
    junit: Annotated[str | None, Parameter(name="--junit")] = None,
    json_: Annotated[bool, Parameter(name="--json")] = False,
    coverage: Annotated[bool, Parameter(name="--coverage")] = False,
    explore: Annotated[int, Parameter(name="--explore")] = 0,
    seed: Annotated[int | None, Parameter(name="--seed")] = None,
) -> int:
    """Run the tests of definitions (*.test.yaml): mocked tools, interactions and people, in-process.

    Parameters
    ----------
    paths
        Test files or folders holding them (default: `definitions/tests/`).
    k
        Run only the cases whose name contains this text (or matches it as a glob).
    junit
        Also write the results as JUnit XML to this file (for CI systems).
    json_
        Print the results as one JSON document instead of text.
    coverage
        Also print, per definition, the nodes and moves the cases took and the exits never taken.
    explore
        Also run this many generated inputs through each definition under test (offline model,
        drawn answers to human tasks) and report runs that fail with a definition or internal error.
    seed
        The seed of --explore's draws (default: a random one, printed, so a finding can be replayed).
    """
    with heavy_imports():
        from flows.testing.coverage import coverage as route_coverage
        from flows.testing.runner import run_tests

    targets = list(paths) or [DEFAULT_DIR]
    missing = [p for p in targets if not Path(p).exists()]
    if missing:
        return error(f"no such file or folder: {', '.join(missing)}",
                     hint="test files are named NAME.test.yaml; by default they are read from definitions/tests/")
    session = run_tests(list(targets), pattern=k, on_result=_quiet if json_ else _print_result)
    if not session.files:
        return error(f"no test files (*.test.yaml) under {', '.join(targets)}",
                     hint="write one: `definition: NAME` and a list of `cases` (docs/testing.md)")
    covered = route_coverage(session.plans, session.results) if coverage else []
    if explore < 0:
        return error(f"--explore takes a number of runs, not {explore}", hint="e.g. --explore 20")
    exploration = None
    if explore and session.catalog is not None and session.plans:
        from flows.testing.explore import explore as run_explore

        chosen = seed if seed is not None else random.SystemRandom().randrange(2**31)
        if not json_:
            out.print(f"[bold]explore[/]: {explore} generated run(s) per definition, seed {chosen} "
                      f"(replay: --explore {explore} --seed {chosen})")
        exploration = run_explore(session.plans, session.catalog, explore, chosen,
                                  on_run=_quiet if json_ else _print_explored)
    code = max(session.exit_code(), 1 if exploration is not None and exploration.findings else 0)
    if junit:
        from flows.testing.junit import junit_xml

        Path(junit).write_text(junit_xml(session, exploration), encoding="utf-8")
    if json_:
        document = _as_json(session, covered)
        if exploration is not None:
            document["exit_code"] = code
            document["explore"] = {"seed": exploration.seed, "runs": len(exploration.runs),
                                   "findings": [r.as_dict() for r in exploration.findings],
                                   "not_run": [r.as_dict() for r in exploration.runs if r.skipped]}
        print(json.dumps(document, indent=2, default=str))
        return code
    if session.problems:
        diagnostics(sorted(session.problems, key=lambda d: (d.file, d.line, d.col)), code=2)
    for found in covered:
        _print_coverage(found)
    passed = len(session.results) - len(session.failed)
    summary = (f"{len(session.results)} case(s): {passed} passed, {len(session.failed)} failed"
               + (f"; {len(session.problems)} problem(s) in test files" if session.problems else "")
               + (f"; explored {len(exploration.runs)} run(s), {len(exploration.findings)} finding(s)"
                  if exploration is not None else "")
               + f" ({session.seconds:.2f} s)")
    sys.stdout.flush()
    (err if code else out).print(f"[red]{summary}[/]" if code else f"[green]{summary}[/]")
    return code


def _quiet(result: Any) -> None:
    """With --json nothing is printed until the end."""


def _print_result(result: Any) -> None:
    where = f"{result.definition} › {escape(result.name)} ({result.seconds:.2f} s)"
    if result.passed:
        out.print(f"[green]PASS[/]  {where}")
        return
    out.print(f"[red]FAIL[/]  {where}  [dim]{escape(result.file)}[/]")
    from flows.testing.compare import difference_lines

    for line in difference_lines(result):
        out.print(f"      {escape(line)}")
    if result.prefect_flow_run_id:  # the temporary store is gone: Prefect keeps the run's flow run
        out.print(f"      [dim]Prefect flow run {result.prefect_flow_run_id}[/]")


def _print_explored(run: Any) -> None:
    """An explored run is printed only when it is a finding or could not be made."""
    where = f"{run.definition} run {run.number} (seed {escape(run.seed)})"
    if run.skipped:
        out.print(f"[yellow]SKIP[/]  {where}: inputs not drawn: {escape(run.skipped)}")
    elif run.finding:
        out.print(f"[red]FOUND[/] {where}: ended {run.status} with a {run.error_kind} error"
                  + (f" at `{escape(run.node)}`" if run.node else ""))
        out.print(f"      error:  {escape(run.error or '')}")
        out.print(f"      inputs: {escape(json.dumps(run.inputs, ensure_ascii=False, default=str))}")


def _print_coverage(found: Any) -> None:
    out.print(f"[bold]coverage[/] {found.definition}: {found.percent:.0f}% "
              f"({len(found.nodes_taken)}/{len(found.nodes)} nodes, {len(found.moves_taken)}/{len(found.moves)} moves, "
              f"{found.cases} case(s))")
    never = [n for n in found.nodes if n not in found.nodes_taken]
    if never:
        out.print(f"  nodes never visited: {escape(', '.join(never))}")
    from flows.testing.coverage import describe

    if found.untaken:
        out.print("  exits never taken:")
        for edge in found.untaken:
            out.print(f"    {escape(describe(edge))}")
    if found.guards:
        seen = sum(g.seen_true + g.seen_false for g in found.guards)
        out.print(f"  guards: {seen}/{2 * len(found.guards)} outcomes seen")
        for guard in found.guards:
            if not (guard.seen_true and guard.seen_false):
                unseen = [w for w, seen_it in (("never true", guard.seen_true), ("never false", guard.seen_false))
                          if not seen_it]
                out.print(f"    {escape(guard.what)}: {', '.join(unseen)}")


def _as_json(session: Any, covered: list[Any]) -> dict[str, Any]:
    return {
        "exit_code": session.exit_code(),
        "seconds": round(session.seconds, 3),
        "files": session.files,
        "problems": [d.as_dict() for d in session.problems],
        "passed": len(session.results) - len(session.failed),
        "failed": len(session.failed),
        "cases": [{"file": r.file, "definition": r.definition, "name": r.name, "passed": r.passed,
                   "seconds": round(r.seconds, 3), "status": r.actual.status, "outcome": r.actual.outcome,
                   "route": r.actual.route, "context": r.actual.context, "calls": r.actual.calls, "refused": r.actual.refused,
                   "error": r.actual.error, "differences": [d.as_dict() for d in r.differences],
                   "prefect_flow_run_id": r.prefect_flow_run_id}
                  for r in session.results],
        "coverage": [c.as_dict() for c in covered],
    }
