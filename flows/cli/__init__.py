"""The `ergon` command: one cyclopts app, one module per group of commands.

Commands return their exit code; :func:`main` turns it into the process exit status. Heavy
imports (prefect, litellm, streamlit) happen inside the commands that need them, so that
`ergon check` and `ergon --help` stay fast.
"""

from __future__ import annotations

import sys

from cyclopts import App

app = App(
    name="ergon",
    help="Ergon: AI business processes as YAML, compiled into Prefect flows.",
    version_flags=["--version"],
)

# Command modules register themselves on `app` when imported.
from flows.cli import (  # noqa: E402,F401
    definitions, deploy, documents, init, interactions, runs, secrets, tasks, tokens, triggers, ui, users, versions,
)


def run(argv: list[str] | None = None) -> int:
    """Run the CLI with the arguments ``argv`` and return the exit code (used by tests)."""
    result = app(argv, result_action="return_value", exit_on_error=False, print_error=True)
    return result if isinstance(result, int) else 0


def main() -> None:
    import signal

    from cyclopts import CycloptsError

    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `ergon schema | head` ends quietly

    try:
        code = app(result_action="return_value")
    except CycloptsError:
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
        raise
    sys.exit(code if isinstance(code, int) else 0)
