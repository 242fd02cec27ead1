"""What `ergon check` does, importable without cyclopts or rich.

`ergon check` runs in editors and CI on every save, so its start-up is most of its time. The
command's cyclopts face is :func:`flows.cli.definitions.check`; :func:`flows.cli.main` calls
:func:`check` here directly when the command line is only paths and ``--json`` (:func:`simple_argv`),
which saves importing cyclopts and rich (about 0.05 s on this 2-core machine). Anything else —
``--help``, an unknown option, ``--json=false`` — goes through cyclopts, which parses and refuses
as always.

A check of input seen before prints its stored result without importing the compiler
(:mod:`flows.cli.check_cache`); ``--no-cache`` or ``ERGON_NO_CHECK_CACHE=1`` checks afresh.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from flows.heap import heavy_imports

DEFAULT_DIR = "definitions"
#: test files of `ergon test`, checked by `ergon check` against the definitions they test
TEST_SUFFIXES = (".test.yaml", ".test.yml")


def simple_argv(args: list[str]) -> tuple[tuple[str, ...], bool, bool] | None:
    """(paths, json, no_cache) for the arguments after `check` when they are only paths,
    ``--json`` and ``--no-cache`` (what cyclopts would bind them to), else None."""
    paths = tuple(a for a in args if a not in ("--json", "--no-cache"))
    if any(a.startswith("-") for a in paths):
        return None
    return paths, "--json" in args, "--no-cache" in args


def context_dirs(paths: tuple[str, ...]) -> list[str]:
    """When single files are checked, their folders (and `definitions/`) give them context."""
    dirs = {str(Path(p).parent) for p in paths if Path(p).is_file()}
    if Path(DEFAULT_DIR).is_dir():
        dirs.add(DEFAULT_DIR)
    return sorted(dirs)


def check(paths: tuple[str, ...], json_: bool, no_cache: bool = False) -> int:
    """Check the definitions under ``paths`` (default `definitions/`); print every diagnostic at
    once (as a JSON array with ``json_``) and a summary line; exit status 1 when one is an error.
    Unless ``no_cache``, a result stored for the same input is printed instead (:mod:`flows.cli.check_cache`)."""
    cache = None
    if not no_cache:
        from flows.cli.check_cache import for_check

        cache = for_check(paths or (DEFAULT_DIR,), json_, DEFAULT_DIR)
    if cache is None:
        return _check(paths, json_)
    replayed = cache.replay()
    return replayed if replayed is not None else cache.record(lambda: _check(paths, json_))


def _check(paths: tuple[str, ...], json_: bool) -> int:
    """The check itself: load, check, print."""
    with heavy_imports():
        from compiler import check_workspace, load_workspace

    targets = paths or (DEFAULT_DIR,)
    missing = [p for p in targets if not Path(p).exists()]
    if missing:
        from flows.cli.output import error

        return error(f"no such file or folder: {', '.join(missing)}")
    # test files (`ergon test`) are checked against the definitions they test, not as definitions
    definitions = tuple(p for p in targets if not p.endswith(TEST_SUFFIXES))
    ws = load_workspace(definitions, context_dirs=context_dirs(targets))
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
        _summary(f"{checked} definition(s) checked, {errors} error(s)", failed=bool(errors))
    return 1 if report.errors else 0


def _summary(text: str, failed: bool) -> None:
    """The summary line: red on standard error when there are errors, else green on standard output."""
    from flows.cli import terminal

    stream = sys.stderr if failed else sys.stdout
    colour = terminal.coloured(stream)
    if colour is None:  # rich's to decide
        from rich.console import Console

        Console(stderr=failed, highlight=False, soft_wrap=True).print(f"[red]{text}[/]" if failed else f"[green]{text}[/]")
        return
    stream.write(terminal.paint(text, "31" if failed else "32", colour) + "\n")
    stream.flush()


def _test_files(targets: tuple[str, ...]) -> list[Path]:
    chosen: list[str | Path] = [t for t in targets if Path(t).is_dir() or t.endswith(TEST_SUFFIXES)]
    if not chosen:  # definition files only: no need to import the test files' models
        return []
    from flows.testing.spec import collect_files

    return collect_files(chosen)


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
