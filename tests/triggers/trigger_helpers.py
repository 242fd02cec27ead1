"""Helpers of the trigger tests: a real `ergon serve` process, waiting for the store to show a run.

(A module of its own, not conftest.py: test modules import these names, and `conftest` is an
ambiguous module name when several test folders have one.)"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path


TOOLS = Path(__file__).parent.parent / "runtime" / "tools"
ERGON = [sys.executable, "-m", "flows.cli"]


def wait_for(predicate, timeout: float = 90.0, what: str = "condition", every: float = 0.25):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Served:
    """A running `ergon serve` and the folder/store it serves."""

    def __init__(self, folder: Path, env: dict[str, str], port: int):
        self.folder, self.env, self.port = folder, env, port
        self.log = folder.parent / "serve.log"
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> Served:
        self.proc = subprocess.Popen(ERGON + ["serve", "--webhook-port", str(self.port)], env=self.env,
                                     stdout=self.log.open("w"), stderr=subprocess.STDOUT, start_new_session=True)
        wait_for(lambda: "ready — Ctrl-C" in self.log.read_text() or self.proc.poll() is not None, 120, "ergon serve to start")
        assert self.proc.poll() is None, self.log.read_text()
        return self

    def stop(self) -> int:
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else 0
        os.killpg(self.proc.pid, signal.SIGINT)  # Ctrl-C, as a person stops it
        try:
            code = self.proc.wait(45)
        except subprocess.TimeoutExpired:
            code = None
        try:  # runs the runner had started, still in serve's process group
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        return code if code is not None else self.proc.wait(10)


