"""Commands about definitions: `check`, `schema`, `compile`, `graph`."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any, Literal

from cyclopts import Parameter
from rich.console import Console

from flows.cli.output import error
from flows.heap import heavy_imports

DEFAULT_DIR = "definitions"
#: test files of `ergon test`, checked by `ergon check` against the definitions they test
TEST_SUFFIXES = (".test.yaml", ".test.yml")
console = Console(highlight=False, soft_wrap=True)
err_console = Console(stderr=True, highlight=False, soft_wrap=True)


def _context_dirs(paths: tuple[str, ...]) -> list[str]:
    """When single files are checked, their folders (and `definitions/`) give them context."""
    dirs = {str(Path(p).parent) for p in paths if Path(p).is_file()}
    if Path(DEFAULT_DIR).is_dir():
        dirs.add(DEFAULT_DIR)
    return sorted(dirs)


def check(*paths: str, json_: Annotated[bool, Parameter(name="--json")] = False) -> int:
    """Check definitions and print every problem at once.

    Parameters
    ----------
    paths
        Files or folders to check (default: `definitions/`).
    json_
        Print the diagnostics as one JSON array.
    """
    with heavy_imports():
        from compiler import check_workspace, load_workspace

    targets = paths or (DEFAULT_DIR,)
    missing = [p for p in targets if not Path(p).exists()]
    if missing:
        return error(f"no such file or folder: {', '.join(missing)}")
    # test files (`ergon test`) are checked against the definitions they test, not as definitions
    definitions = tuple(p for p in targets if not p.endswith(TEST_SUFFIXES))
    ws = load_workspace(definitions, context_dirs=_context_dirs(targets))
    report = check_workspace(ws)
    report.diagnostics.extend(_test_file_problems(targets, ws, report))
    if json_:
        print(json.dumps([d.as_dict() for d in report.diagnostics], indent=2))
    else:
        for d in report.diagnostics:
            print(d.format())
        sys.stdout.flush()  # diagnostics (stdout) before the summary (stderr) when both are piped
        checked = len(ws.reported_units())
        errors = len(report.errors)
        summary = f"{checked} definition(s) checked, {errors} error(s)"
        (err_console if errors else console).print(f"[red]{summary}[/]" if errors else f"[green]{summary}[/]")
    return 1 if report.errors else 0


def _test_files(targets: tuple[str, ...]) -> list[Path]:
    from flows.testing.spec import collect_files

    return collect_files([t for t in targets if Path(t).is_dir() or t.endswith(TEST_SUFFIXES)])


def _test_file_problems(targets: tuple[str, ...], ws: Any, report: Any) -> list[Any]:
    """The problems of the test files under ``targets`` (:mod:`flows.testing.checks`)."""
    files = _test_files(targets)
    if not files:  # most folders have none: import nothing for them
        return []
    from flows.testing.checks import check_test_file
    from flows.testing.spec import load_test_file

    found = []
    for path in files:
        _, problems = check_test_file(load_test_file(path), ws, lambda u: [d for d in report.errors if d.file == u.file])
        found.extend(problems)
    return found


def schema(kind: Annotated[str | None, Parameter(name="--kind")] = None) -> int:
    """Print the JSON Schema of the definition kinds (for editors' YAML language servers).

    Parameters
    ----------
    kind
        One kind (process, pipeline, interaction, template, workflow, form, environment);
        default: one schema accepting any kind.
    """
    with heavy_imports():
        from compiler.schema_export import definition_schema

    try:
        print(json.dumps(definition_schema(kind), indent=2))
    except KeyError as exc:
        return error(exc.args[0])
    return 0


def _plan_or_report(name: str, folder: str):
    with heavy_imports():
        from compiler import CompileError, compile_plan, load_workspace

    target = Path(name)
    ws = load_workspace([target] if target.is_file() else [folder], context_dirs=_context_dirs((name,)))
    key = name
    if target.is_file():
        unit = next(u for u in ws.units if Path(u.file).resolve() == target.resolve())
        key = unit.name or name
    try:
        return compile_plan(ws, key), 0
    except CompileError as exc:
        for d in exc.diagnostics:
            print(d.format())
        return None, 1
    except KeyError as exc:
        error(exc.args[0])
        return None, 2


def compile_(
    name: str,
    *,
    json_: Annotated[bool, Parameter(name="--json")] = False,
    definitions: Annotated[str, Parameter(name="--definitions")] = DEFAULT_DIR,
) -> int:
    """Compile a definition into its executable Plan and print it.

    Parameters
    ----------
    name
        Definition name, or a path to a definition file.
    json_
        Print the Plan as JSON (default: a readable summary).
    definitions
        The definitions folder.
    """
    plan, code = _plan_or_report(name, definitions)
    if plan is None:
        return code
    if json_:
        print(json.dumps(plan.to_json(), indent=2, sort_keys=False))
    else:
        console.print(plan.summary())
    return 0


def graph(
    name: str,
    *,
    format: Literal["mermaid", "dot"] = "mermaid",
    definitions: Annotated[str, Parameter(name="--definitions")] = DEFAULT_DIR,
) -> int:
    """Draw a definition as a Mermaid or Graphviz DOT graph (lanes/phases, guard labels).

    Parameters
    ----------
    name
        Definition name, or a path to a definition file.
    format
        `mermaid` or `dot`.
    definitions
        The definitions folder.
    """
    from compiler.render import render_dot, render_mermaid

    plan, code = _plan_or_report(name, definitions)
    if plan is None:
        return code
    print(render_mermaid(plan) if format == "mermaid" else render_dot(plan))
    return 0
