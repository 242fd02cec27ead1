"""Fixtures of the trigger tests: a definitions folder and a store of a test module's own, for a
real `ergon serve` sharing the session's Prefect server (see trigger_helpers.py)."""

from __future__ import annotations

import os
import shutil

import pytest

from trigger_helpers import TOOLS

@pytest.fixture(scope="module")
def serve_env(prefect_api, migrated_template, tmp_path_factory):
    """A definitions folder (with the runtime test tools) and a store of this module's own,
    set in this process's environment too (so the test reads what `serve` writes)."""
    from flows.store import db

    root = tmp_path_factory.mktemp("serve")
    folder = root / "definitions"
    shutil.copytree(TOOLS, folder / "tools", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(migrated_template, root / "ergon.db")
    url = f"sqlite:///{root / 'ergon.db'}"
    mp = pytest.MonkeyPatch()
    mp.setenv("ERGON_DATABASE_URL", url)
    mp.setenv("ERGON_DEFINITIONS", str(folder))
    mp.setenv("ERGON_HOME", str(root / "home"))
    db.init_db(url)
    env = {**os.environ, "COLUMNS": "200"}
    yield folder, env
    db.dispose_all()
    mp.undo()
