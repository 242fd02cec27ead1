"""`ergon ui` as a process: stopping it stops the dashboard (no Streamlit left serving).

A service manager, a container runtime or a shell's ``kill`` stops ``ergon ui`` with SIGTERM and
expects the dashboard to be gone. The test starts the real command, waits until the dashboard
answers, sends the signal to the ``ergon ui`` process (not its group), and checks that nothing
serves on the port any more and that no process of its session is left.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import pytest


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _serving(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as resp:
            return resp.read() == b"ok"
    except OSError:
        return False


def _session_pids(sid: int) -> list[int]:
    """Live processes of session ``sid`` (Linux /proc), zombies excluded."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == sid and fields[0] != "Z":  # fields: state, ppid, pgrp, session, ...
            pids.append(int(entry))
    return pids


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads the process table from /proc (Linux)")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_a_signal_to_ergon_ui_stops_the_dashboard(tmp_path, sig):
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    env = {**os.environ, "ERGON_HOME": str(tmp_path)}
    log = open(tmp_path / "ui.log", "wb")
    proc = subprocess.Popen([sys.executable, "-m", "flows.cli", "ui", "--port", str(port)], env=env, stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 90
        while not _serving(url):
            assert proc.poll() is None and time.monotonic() < deadline, (tmp_path / "ui.log").read_text()
            time.sleep(0.3)
        proc.send_signal(sig)
        proc.wait(timeout=30)
        deadline = time.monotonic() + 15
        while (_serving(url) or _session_pids(proc.pid)) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _serving(url), f"the dashboard still serves on {url} after {sig.name} to `ergon ui`"
        assert not _session_pids(proc.pid), f"processes of `ergon ui` left running: {_session_pids(proc.pid)}"
    finally:
        for pid in _session_pids(proc.pid):
            os.kill(pid, signal.SIGKILL)
        if proc.poll() is None:
            proc.kill()
        log.close()
