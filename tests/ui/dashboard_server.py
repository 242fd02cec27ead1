"""A real dashboard server for the browser tests: `ergon ui`'s Streamlit command on a free port,
up once its health endpoint answers, stopped (its session) afterwards."""

from __future__ import annotations

import os
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def dashboard(folder: Path) -> Iterator[str]:
    """The dashboard's URL while it runs (its log in ``folder/streamlit.log``)."""
    from flows.cli.ui import streamlit_command

    port = free_port()
    log = open(folder / "streamlit.log", "wb")  # noqa: SIM115 - closed with the process
    proc = subprocess.Popen(streamlit_command(port), env=dict(os.environ), stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    try:
        while True:
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as resp:
                    if resp.read() == b"ok":
                        break
            except OSError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, (folder / "streamlit.log").read_text()
            time.sleep(0.3)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
