"""The package map of the README, checked: who may import prefect and the store's SQL libraries.

* Only ``flows/prefect/`` imports prefect; only ``flows/store/`` imports sqlalchemy, sqlmodel or
  alembic; ``compiler/`` imports neither (nor litellm) — checked on the source of every module,
  imports inside functions included.
* In a fresh interpreter, importing every other module of ``flows`` loads no prefect: the engine,
  the bodies, the run owner and the CLI reach Prefect only when a run executes.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: top-level package → the only folder (relative to the repository) whose modules may import it
OWNERS = {
    "prefect": "flows/prefect",
    "sqlalchemy": "flows/store",
    "sqlmodel": "flows/store",
    "alembic": "flows/store",
}


def _imported_packages(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


def _modules(*folders: str) -> list[Path]:
    return sorted(p for folder in folders for p in (ROOT / folder).rglob("*.py"))


def test_each_library_is_imported_only_by_its_owner_package() -> None:
    offenders = []
    for path in _modules("compiler", "flows", "ui"):
        rel = path.relative_to(ROOT).as_posix()
        for package in _imported_packages(path) & set(OWNERS):
            if not rel.startswith(OWNERS[package] + "/"):
                offenders.append(f"{rel} imports {package} (only {OWNERS[package]}/ may)")
    assert not offenders, "\n".join(offenders)


def test_the_check_sees_imports_inside_functions(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("def f():\n    from prefect.states import Failed\n    import sqlmodel.sql\n")
    assert _imported_packages(sample) == {"prefect", "sqlmodel"}


_PROBE = """
import importlib, json, sys
loaded = {}
for name in json.loads(sys.argv[1]):
    importlib.import_module(name)
    loaded[name] = "prefect" in sys.modules
print(json.dumps(loaded))
"""


def test_importing_everything_outside_flows_prefect_loads_no_prefect(tmp_path: Path) -> None:
    names = []
    for path in _modules("flows"):
        rel = path.relative_to(ROOT).with_suffix("")
        parts = [p for p in rel.parts if p != "__init__"]
        name = ".".join(parts)
        if name.startswith(("flows.prefect", "flows.store.migrations")) or name == "flows.cli.__main__":
            continue
        names.append(name)
    assert "flows.runtime.engine" in names and "flows.runs.lifecycle" in names and "flows.cli" in names
    env = {"PATH": "/usr/bin:/bin", "ERGON_HOME": str(tmp_path), "HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", _PROBE, json.dumps(names)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    loaded = json.loads(done.stdout.strip().splitlines()[-1])
    first = next((n for n in names if loaded[n]), None)
    assert first is None, f"importing {first} loads prefect: only flows.prefect may"


def test_only_the_run_owner_writes_a_runs_status() -> None:
    """A run's status is written by flows/runs/ (its recorder while it executes) and nowhere else
    in the product: every other module asks the run owner (``flows.runs``)."""
    writers = []
    for path in _modules("flows", "ui"):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith(("flows/runs/", "flows/store/")):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr in ("set_run_status", "create_run", "mark_stale_runs_crashed"):
                writers.append(f"{rel}:{node.lineno} calls {node.func.attr}")
    assert not writers, "\n".join(writers)
