"""Runtime test fixtures: a definitions folder per test, run through the real Prefect backend."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

TOOLS = Path(__file__).parent / "tools"
sys.path.insert(0, str(TOOLS))


@pytest.fixture
def definitions(tmp_path, monkeypatch):
    """An empty definitions folder (with the test tools) that the catalog reads."""
    folder = tmp_path / "definitions"
    shutil.copytree(TOOLS, folder / "tools", ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setenv("ERGON_DEFINITIONS", str(folder))
    ledger = Path(__import__("os").environ["ERGON_HOME"]) / "ledger"
    shutil.rmtree(ledger, ignore_errors=True)
    return folder


@pytest.fixture
def run_def(prefect_api, store, definitions):
    """run_def({"file.yaml": text, ...}, name, inputs) → the run's result dict."""
    from flows.catalog import Catalog
    from flows.cli.runs import execute_run

    def run(files: dict[str, str], name: str, inputs: dict | None = None, *, mutate=None, **kw) -> dict:
        """``mutate(plan) -> plan`` alters the compiled Plan, to reach runtime checks that the
        static checker would otherwise refuse first."""
        for fname, text in files.items():
            (definitions / fname).write_text(text)
        catalog = Catalog.load()
        compiled = catalog.compile(name)
        if mutate is not None:
            compiled.plan = mutate(compiled.plan)
        return execute_run(compiled, inputs or {}, catalog=catalog, **kw)

    return run
