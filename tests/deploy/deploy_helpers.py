"""Helpers shared by the deployment and cluster tests: the `ergon` CLI and a real Prefect worker
as subprocesses, and waits on the store and the Prefect API (no fixed sleeps: poll for a state)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[2]
ERGON = [sys.executable, "-m", "flows.cli"]


def cli(args: list[str], env: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess:
    """``ergon ARGS`` from the project folder (where deployments import their entrypoint)."""
    return subprocess.run(ERGON + args, env=env, cwd=ROOT, capture_output=True, text=True, timeout=timeout)


class Worker:
    """``prefect worker start --pool POOL`` in its own process group, logging to a file."""

    def __init__(self, pool: str, env: dict[str, str], log: Path, limit: int = 4, *, python: str = sys.executable,
                 cwd: Path = ROOT):
        self.pool, self.env, self.log, self.limit = pool, env, log, limit
        self.python, self.cwd = python, cwd  # an installed Ergon's interpreter, started in its project folder
        self.proc: subprocess.Popen | None = None

    def start(self) -> Worker:
        env = {**self.env, "PREFECT_WORKER_QUERY_SECONDS": "1", "PREFECT_WORKER_PREFETCH_SECONDS": "5",
               "PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL": "INFO"}  # the log file is the diagnosis of a failed test
        with open(self.log, "ab") as fh:
            self.proc = subprocess.Popen(
                [self.python, "-m", "prefect", "worker", "start", "--pool", self.pool, "--limit", str(self.limit)],
                env=env, cwd=self.cwd, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        return self

    def stop(self) -> None:
        """A worker ignores SIGTERM; the first SIGINT stops it (and its runs) gracefully, a
        second forces it; kill the group if it is still there."""
        if self.proc is None or self.proc.poll() is not None:
            return
        for _ in range(2):
            try:
                os.killpg(self.proc.pid, signal.SIGINT)
            except ProcessLookupError:
                return
            try:
                self.proc.wait(timeout=10)
                return
            except subprocess.TimeoutExpired:
                continue
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=10)

    def kill(self) -> None:
        """SIGKILL the worker and everything it started (a machine lost, not a clean stop)."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)

    def tail(self, lines: int = 40) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:]) if self.log.exists() else ""


def wait_for(what: str, probe: Callable[[], Any], timeout: float = 120, every: float = 0.3,
              diagnose: Callable[[], str] | None = None) -> Any:
    """Poll ``probe`` until it returns something truthy; fail with ``what`` (and a diagnosis)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = probe()
        if value:
            return value
        time.sleep(every)
    raise AssertionError(f"timed out waiting for {what}" + (f"\n{diagnose()}" if diagnose else ""))


def deploy(name: str, pool: str, env: dict[str, str], prefect_file: Path) -> None:
    """``ergon deploy NAME`` onto ``pool``, registered with Prefect; the test fails with its output otherwise."""
    done = cli(["deploy", name, "--work-pool", pool, "--prefect-file", str(prefect_file)], env)
    assert done.returncode == 0, done.stdout + done.stderr


def run_in(flow_run_id: Any, *statuses: str) -> Callable[[], Any]:
    """A :func:`wait_for` probe: the Ergon run of a Prefect flow run, once its status is one of ``statuses``."""
    from flows.store import runs as run_store

    def probe() -> Any:
        run = run_store.get_run_by_prefect_id(str(flow_run_id))
        return run if run is not None and run.status in statuses else None

    return probe


def flow_run(flow_run_id: Any) -> Any:
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        return client.read_flow_run(flow_run_id)


def start_deployment(name: str, parameters: dict[str, Any]) -> Any:
    """Create a flow run of deployment ``name`` (``flow/deployment``) without waiting for it."""
    from prefect.deployments import run_deployment

    return run_deployment(name, parameters=parameters, timeout=0)


def pid_alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
