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
    definitions, deploy, documents, init, interactions, runs, secrets, submissions, tasks, tokens, triggers, ui, users,
    versions,
)


def run(argv: list[str] | None = None) -> int:
    """Run the CLI with the arguments ``argv`` and return the exit code (used by tests)."""
    result = app(argv, result_action="return_value", exit_on_error=False, print_error=True)
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


def main() -> None:
    import signal

    from cyclopts import CycloptsError

    try:
        code = app(result_action="return_value")
    except BrokenPipeError:
        # `ergon schema | head`: the reader of our output left — end quietly, as a shell tool does.
        # SIGPIPE itself stays ignored (Python's default): restoring it would let any write to a
        # socket its peer just closed (a keep-alive connection to Prefect's server or a model's)
        # kill a running `ergon run` outright, instead of raising an error the client retries.
        if not _stdout_broken():
            raise
        sys.exit(128 + signal.SIGPIPE)
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
