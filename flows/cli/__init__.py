"""The `ergon` command: one cyclopts app, one module per group of commands.

Commands return their exit code; :func:`main` turns it into the process exit status.

Start-up time is part of the interface (`ergon check` runs in editors and in CI, on every save),
so nothing is imported before it is needed. Importing this package imports no cyclopts: the app is
made on first use (:func:`get_app`, also ``flows.cli.app``), and the two commands run most never
make it — `ergon --help` (and `ergon` alone) is printed by :mod:`flows.cli.help_page`, the same
page cyclopts would print, and `ergon check` given only paths and ``--json`` runs
:mod:`flows.cli.checking` directly; both without cyclopts or rich. Every other command goes through
cyclopts, registered *lazily* (:data:`COMMANDS`, cyclopts' ``app.command("module:attribute")``): a
command's module is imported only when that command runs or shows its own help. Inside the
modules, heavy imports (prefect, litellm, streamlit) happen in the commands that need them; the
definition commands import the compiler with the garbage collector paused (:mod:`flows.heap`).

No refusal and no fault of the machine prints a traceback (:func:`main`): an
:class:`~flows.errors.ErgonError` a command did not catch itself, a full disk (``ENOSPC``, naming
the file), and a fault of the store's database (full, damaged, locked past the busy timeout —
:mod:`flows.store.faults`) are each printed as one ``error:`` line, exit status 1. A traceback is
left for what is a bug.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cyclopts import App

#: What `ergon` is, the first lines of `ergon --help`.
DESCRIPTION = "Ergon: AI business processes as YAML, compiled into Prefect flows."


def _version() -> str:
    """The installed distribution's version (its metadata, as pip and the wheel carry it)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("ergon")
    except PackageNotFoundError:  # the sources run without being installed
        return "unknown (not installed)"


#: Every command, in the order `ergon` lists them when a name is unknown: CLI name → (the
#: function or sub-``App`` as ``module:attribute``, the help `ergon --help` lists for it). cyclopts
#: shows a lazy command's registered help in the list without importing it, and keeps it as the
#: command's description once imported, so each text is the command's own — its docstring up to
#: the parameters, or its ``App(help=...)`` — and ``tests/test_cli_commands.py`` checks they agree.
COMMANDS: dict[str, tuple[str, str]] = {
    "check": ("flows.cli.definitions:check", "Check definitions and print every problem at once."),
    "schema": ("flows.cli.definitions:schema",
               "Print the JSON Schema of the definition kinds (for editors' YAML language servers)."),
    "compile": ("flows.cli.definitions:compile_", "Compile a definition into its executable Plan and print it."),
    "graph": ("flows.cli.definitions:graph",
              "Draw a definition as a Mermaid or Graphviz DOT graph (lanes/phases, guard labels)."),
    "deploy": ("flows.cli.deploy:deploy",
               "Write the deployments of definitions into prefect.yaml and register them with Prefect."),
    "documents": ("flows.cli.documents:documents_app", "The local document store (fetch_document, search_documents)."),
    "init": ("flows.cli.init:init",
             "Create an Ergon project: example definitions, a Python tool, prefect.yaml, a README."),
    "interactions": ("flows.cli.interactions:interactions_app", "List interactions and run one on its own."),
    "runs": ("flows.cli.runs:runs_app", "Inspect and control runs."),
    "server": ("flows.cli.server:server_app",
               "The Prefect API Ergon uses: the one Prefect's configuration names, or Ergon's local server."),
    "run": ("flows.cli.runs:run",
            "Validate a definition, run it on Prefect, show progress node by node, wait for the end.\n\n"
            "The run is recorded as started by the user you act as (--as, --token; see `ergon tokens`)."),
    "secrets": ("flows.cli.secrets:secrets_app",
                "Encrypted secrets (`secret:NAME` in definitions). Values come from stdin."),
    "submissions": ("flows.cli.submissions:submissions_app",
                    "Submissions: instances of forms, every value with its versions."),
    "test": ("flows.cli.testing:test",
             "Run the tests of definitions (*.test.yaml): mocked tools, interactions and people, in-process."),
    "tasks": ("flows.cli.tasks:tasks_app", "Human tasks: the inbox of the user you act as (see --as, --token)."),
    "tools": ("flows.cli.tools:tools_app",
              "MCP tool servers: record their tools for `ergon check` (sync), list them."),
    "tokens": ("flows.cli.tokens:tokens_app",
               "Personal API tokens: act as yourself without a password (--token, ERGON_TOKEN)."),
    "schedules": ("flows.cli.triggers:schedules_app",
                  "Triggers of the definitions: next/last run, pause, resume, run now."),
    "serve": ("flows.cli.triggers:serve",
              "Serve every triggered definition of the folder: schedules, webhooks, email (until Ctrl-C)."),
    "ui": ("flows.cli.ui:ui", "Start the dashboard (runs, a run's story, the task inbox, artifacts, definitions)."),
    "users": ("flows.cli.users:users_app", "Users, groups and admins (who may see and answer human tasks)."),
    "publish": ("flows.cli.versions:publish",
                "Publish a definition's draft (its file) as an immutable new version, recorded as published by the "
                "user you act as (--as, --token).\n\nRefused when the definition has errors; a no-op when it equals "
                "the latest version. Warns, naming them, about paused runs the change breaks."),
    "versions": ("flows.cli.versions:versions_",
                 "List the published versions of a definition, and whether the draft differs from the latest."),
    "diff": ("flows.cli.versions:diff",
             "Show what changed between two versions: nodes, their fields, context fields, transitions."),
    "revert": ("flows.cli.versions:revert",
               "Write a published version's exact text back into the draft file (no new version is made)."),
    "completion": ("flows.cli.completion:completion_app",
                   "Shell completion for bash, zsh and fish: print the script, or install it."),
}
_app: App | None = None


def get_app() -> App:
    """The cyclopts app of every command, made (and cyclopts imported) on first use."""
    global _app
    if _app is None:
        from cyclopts import App

        made = App(name="ergon", help=DESCRIPTION, version=_version, version_flags=["--version"])
        for name, (target, text) in COMMANDS.items():
            made.command(target, name=name, help=text)
        _app = made
    return _app


def __getattr__(name: str) -> Any:
    """``flows.cli.app`` is :func:`get_app`'s app (PEP 562): importing this package imports no cyclopts."""
    if name == "app":
        return get_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _help_page(argv: list[str]) -> int | None:
    """Print `ergon --help` (or `ergon` alone) from :mod:`flows.cli.help_page` and return 0, or
    return None when it is another command or a page that module leaves to cyclopts."""
    if argv not in ([], ["--help"], ["-h"]):
        return None
    from flows.cli.help_page import page

    text = page({name: text for name, (_target, text) in COMMANDS.items()}, DESCRIPTION)
    if text is None:
        return None
    sys.stdout.write(text)
    sys.stdout.flush()
    return 0


def _check(argv: list[str]) -> int | None:
    """Run `ergon check` without cyclopts when its arguments are only paths and ``--json``
    (:mod:`flows.cli.checking`), or return None to let cyclopts parse the command line."""
    if not argv or argv[0] != "check":
        return None
    from flows.cli.checking import check, simple_argv

    simple = simple_argv(argv[1:])
    return None if simple is None else check(*simple)


class _NeverRaised(Exception):
    """Stands for cyclopts' usage error while cyclopts is not imported (then none can be raised)."""


def _usage_error() -> type[BaseException]:
    """cyclopts' base error if cyclopts was imported, else an exception nothing raises."""
    module = sys.modules.get("cyclopts")
    return module.CycloptsError if module is not None else _NeverRaised


def run(argv: list[str] | None = None) -> int:
    """Run the CLI with the arguments ``argv`` and return the exit code (used by tests)."""
    result = get_app()(argv, result_action="return_value", exit_on_error=False, print_error=True)
    return result if isinstance(result, int) else 0


def _stdout_broken() -> bool:
    """Whether standard output's reader is gone (a pipe whose read end closed reports an error
    when polled); if so, it is pointed at /dev/null, so the interpreter's flush at exit is quiet."""
    import os
    import select

    try:
        fd = sys.stdout.fileno()
        poller = select.poll()
        poller.register(fd, select.POLLOUT)
        events = poller.poll(0)
    except (OSError, ValueError, AttributeError):
        return False
    if not any(mask & (select.POLLERR | select.POLLHUP) for _, mask in events):
        return False
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    return True


def _prefect_unreachable(exc: BaseException) -> str | None:
    """A sentence for an error that only says Prefect's API could not be reached (a server the
    user's configuration names that is down), or None for anything else (a traceback is a bug)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        text = str(current)
        if text.startswith("Failed to reach API at") or type(current).__name__ in ("ConnectError", "ConnectTimeout"):
            from flows.prefect.server import configured

            api = configured()
            where = f" ({api.where})" if api is not None else ""
            url = api.url if api is not None else "the configured address"
            return f"cannot reach Prefect's API at {url}{where}: {' '.join(text.split()) or type(current).__name__}"
        current = current.__cause__ or current.__context__
    return None


def _said(exc: BaseException) -> str | None:
    """The one sentence for an error that is not a bug — a refusal (:class:`ErgonError`), a full
    disk, a fault of the store's database — or None (then the traceback is the report)."""
    from flows.errors import ErgonError

    if isinstance(exc, ErgonError):
        return str(exc)
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, ErgonError):
            return str(current)
        if isinstance(current, OSError):
            from flows.files import DiskFull, is_no_space

            if is_no_space(current):
                return str(DiskFull(current.filename or "a file Ergon writes"))
        current = current.__cause__ or current.__context__
    if "sqlite3" in sys.modules or "sqlalchemy" in sys.modules:  # only a command that opened the store
        from flows.store.db import fault

        found = fault(exc)
        if found is not None:
            return str(found)
    return None


#: Commands that work on the current folder itself, not on the project above it (`completion`
#: belongs to no project: its ``--output FILE`` means the file where the command was typed).
_HERE_COMMANDS = frozenset({"init", "completion"})


def _enter_project(argv: list[str]) -> list[str]:
    """Move to the project's root when the current folder is below it (:func:`flows.settings.project_root`),
    saying so on stderr, and return ``argv`` with its arguments that name an existing file or folder
    relative to the folder the command was typed in made absolute (they keep meaning what the user
    meant). A command name (and a group's subcommand), an option's name and a folder that is no
    project's change nothing."""
    import os

    if not argv or argv[0] not in COMMANDS or argv[0] in _HERE_COMMANDS or os.environ.get("ERGON_DEFINITIONS"):
        return argv
    from pathlib import Path

    from flows.settings import project_root

    here = Path.cwd()
    root = project_root(here)
    if root is None or root == here:
        return argv
    skip = 2 if COMMANDS[argv[0]][0].endswith("_app") else 1  # `runs list`: the group and its subcommand
    out = argv[:skip]
    for token in argv[skip:]:
        name, eq, value = token.partition("=") if token.startswith("-") else ("", "", token)
        if not eq and name:  # an option's name (`--json`), its value being the next token
            out.append(token)
            continue
        if value and not value.startswith("-") and not os.path.isabs(value) and os.path.lexists(value):
            value = str((here / value).resolve())
        out.append(f"{name}{eq}{value}")
    os.chdir(root)
    os.environ["PWD"] = str(root)
    print(f"ergon: using the project at {root}", file=sys.stderr, flush=True)
    return out


def main() -> None:
    import os
    import signal

    from flows import heap

    heap.mark_one_run_process()  # this process runs one command and ends (see flows.heap)
    # started with a standard stream closed (`ergon check >&-`), Python leaves it None: what the
    # command would print there goes nowhere, as a shell tool's output does, instead of failing
    for name in ("stdout", "stderr"):
        if getattr(sys, name) is None:
            setattr(sys, name, open(os.devnull, "w", encoding="utf-8"))  # noqa: SIM115 - for the process's life

    try:
        code = _help_page(sys.argv[1:])
        if code is None:
            from flows.cli.shadowing import refuse_in_shadowed_folder

            argv = refuse_in_shadowed_folder(_enter_project(sys.argv[1:]))
            code = _check(argv)
            if code is None:
                code = get_app()(argv, result_action="return_value")
    except BrokenPipeError:
        # `ergon schema | head`: the reader of our output left — end quietly, as a shell tool does.
        # SIGPIPE itself stays ignored (Python's default): restoring it would let any write to a
        # socket its peer just closed (a keep-alive connection to Prefect's server or a model's)
        # kill a running `ergon run` outright, instead of raising an error the client retries.
        if not _stdout_broken():
            raise
        sys.exit(128 + signal.SIGPIPE)
    except _usage_error():
        sys.exit(2)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        sys.exit(130)
    except BaseException as exc:
        # Prefect turns SIGTERM into an exception of its own (the run record is already ended by
        # the run owner): a signal that stops a command is not a crash, so no traceback
        number = getattr(exc, "signal", None)
        if isinstance(number, int) and not isinstance(exc, SystemExit):
            print(f"stopped by {signal.Signals(number).name}", file=sys.stderr)
            sys.exit(128 + number)
        if not isinstance(exc, SystemExit) and (said := _said(exc)) is not None:
            from flows.cli.output import error

            sys.exit(error(said, code=1))
        if (unreachable := _prefect_unreachable(exc)) is not None:
            from flows.cli.output import error

            sys.exit(error(unreachable, hint="start that server, or point Prefect's configuration at one that runs "
                                             "(`ergon server status` says which API is used and where it is set)",
                           code=1))
        raise
    sys.exit(code if isinstance(code, int) else 0)
