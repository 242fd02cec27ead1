"""A real dashboard for the browser tests: its store and definitions (:func:`dashboard_store`),
and `ergon ui`'s Streamlit command on a free port (:func:`dashboard`), up once its health
endpoint answers, stopped afterwards."""

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


TOOLS = Path(__file__).resolve().parents[1] / "runtime" / "tools"


@contextmanager
def dashboard_store(folder: Path, migrated_template: Path, files: dict[str, str]) -> Iterator[Path]:
    """A migrated store and a definitions folder (``files``, and the test tools) in ``folder``,
    made the process's (and so the dashboard's) store, with the approver alice (password
    ``wonderland``, group legal)."""
    import shutil

    import pytest

    from flows import people
    from flows.store import db

    shutil.copy(migrated_template, folder / "ergon.db")
    defs = folder / "definitions"
    shutil.copytree(TOOLS, defs / "tools", ignore=shutil.ignore_patterns("__pycache__"))
    for name, text in files.items():
        (defs / name).parent.mkdir(parents=True, exist_ok=True)
        (defs / name).write_text(text)
    url = f"sqlite:///{folder / 'ergon.db'}"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ERGON_DATABASE_URL", url)
        mp.setenv("ERGON_DEFINITIONS", str(defs))
        mp.delenv("ERGON_UI_REQUIRE_LOGIN", raising=False)
        db.init_db(url)
        people.add_user("alice", ["legal"], password="wonderland")
        yield folder
        db.dispose_all()
