"""Commands about definitions: `check`, `schema`, `compile`, `graph`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Literal

from cyclopts import Parameter
from rich.console import Console

from flows.cli.checking import DEFAULT_DIR
from flows.cli.checking import check as run_check
from flows.cli.checking import context_dirs as _context_dirs
from flows.cli.output import error
from flows.heap import heavy_imports

console = Console(highlight=False, soft_wrap=True)


def check(
    *paths: str,
    json_: Annotated[bool, Parameter(name="--json")] = False,
    no_cache: Annotated[bool, Parameter(name="--no-cache", negative=())] = False,
) -> int:
    """Check definitions and print every problem at once.

    Parameters
    ----------
    paths
        Files or folders to check (default: `definitions/`).
    json_
        Print the diagnostics as one JSON array.
    no_cache
        Check afresh: neither print a result stored for the same input nor store this one
        (also `ERGON_NO_CHECK_CACHE=1`).
    """
    return run_check(paths, json_, no_cache)


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
