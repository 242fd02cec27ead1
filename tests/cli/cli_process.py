"""Fresh `ergon` processes for the CLI tests: on a pipe with ``-X importtime`` (what they
imported), and in a pseudo-terminal (what a user's terminal receives)."""

from __future__ import annotations

import os
import pty
import select
import struct
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def clean_env(**extra: str) -> dict[str, str]:
    """This environment without what decides rich's colour and width, plus ``extra``; `ergon check`
    checks afresh (no check cache: these tests are about what the check itself imports and prints)."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("COLUMNS", "LINES", "NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "TERM")}
    return {**env, "ERGON_NO_CHECK_CACHE": "1", **extra}


def imported(argv: list[str], env: dict[str, str]) -> tuple[str, set[str]]:
    """Standard output and the modules a fresh `python -X importtime -m flows.cli ARGV` imported."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "flows.cli", *argv], cwd=ROOT, env=env,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    modules = {line.rsplit("|", 1)[1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    return done.stdout, modules


def terminal_output(cmd: list[str], *, cwd: Path, env: dict[str, str], columns: int,
                    stderr_too: bool = True) -> tuple[bytes, int, bytes]:
    """What ``cmd`` writes to a pseudo-terminal ``columns`` wide, as written ("\n" not turned
    into "\r\n"), until it exits: (standard output — and error with ``stderr_too`` —, its exit
    status, its standard error when that went to a pipe)."""
    import fcntl
    import termios

    controller, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    attrs = termios.tcgetattr(terminal)
    attrs[1] &= ~termios.ONLCR  # no "\r\n" for "\n": the bytes as the program wrote them
    termios.tcsetattr(terminal, termios.TCSANOW, attrs)
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=terminal, stdout=terminal,
                            stderr=terminal if stderr_too else subprocess.PIPE, close_fds=True)
    os.close(terminal)
    out = b""
    while True:
        ready, _, _ = select.select([controller], [], [], 60)
        if not ready:
            break
        try:
            chunk = os.read(controller, 65536)
        except OSError:  # the terminal's last writer is gone
            break
        if not chunk:
            break
        out += chunk
    status = proc.wait(timeout=60)
    os.close(controller)
    return out, status, proc.stderr.read() if proc.stderr else b""


def in_a_terminal(argv: list[str], env: dict[str, str], columns: int, *, stderr_too: bool = False,
                  status: int = 0) -> bytes:
    """What `python -m flows.cli ARGV` writes to a pseudo-terminal ``columns`` wide (standard
    output; standard error too with ``stderr_too``, else it goes to a pipe); it must exit ``status``."""
    out, code, err = terminal_output([sys.executable, "-m", "flows.cli", *argv], cwd=ROOT, env=env, columns=columns,
                                     stderr_too=stderr_too)
    assert code == status, err
    return out
