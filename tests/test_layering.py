"""The package map of docs/architecture.md, checked: who may import prefect and the store's SQL libraries.

* Only ``flows/prefect/`` imports prefect; only ``flows/store/`` imports sqlalchemy, sqlmodel or
  alembic; ``compiler/`` imports neither (nor litellm) — checked on the source of every module,
  imports inside functions included.
* In a fresh interpreter, importing every other module of ``flows`` loads no prefect: the engine,
  the bodies, the run owner and the CLI reach Prefect only when a run executes.
* The packages of ``flows`` import downwards only: no package imports one that imports it back
  (through others too). What acts around a run is reached through :mod:`flows.moments`, whose
  hooks are named, not imported; each of them resolves.
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


def _flows_imports(path: Path) -> set[str]:
    """The ``flows`` modules ``path`` imports (absolute imports; the code base uses no others)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith("flows."))
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and node.module.startswith("flows"):
            found.update(f"{node.module}.{alias.name}" for alias in node.names)  # `from flows import runs`
    return found


def _unit(module: str) -> str | None:
    """The unit of layering a ``flows`` module belongs to: its package (``flows.runs``) or, for a
    module directly in ``flows``, itself (``flows.moments``); None for a name that is neither."""
    parts = module.split(".")
    if len(parts) < 2:
        return None
    unit = ".".join(parts[:2])
    folder = ROOT / "flows" / parts[1]
    return unit if folder.is_dir() or folder.with_suffix(".py").exists() else None


def _package_graph() -> dict[str, dict[str, str]]:
    """unit → {unit it imports: where (``file:line``-free, the first module that does)}."""
    graph: dict[str, dict[str, str]] = {}
    for path in _modules("flows"):
        rel = path.relative_to(ROOT)
        if "migrations" in rel.parts:
            continue
        source = _unit(".".join(p for p in rel.with_suffix("").parts if p != "__init__"))
        for target in filter(None, map(_unit, _flows_imports(path))):
            if source and target != source:
                graph.setdefault(source, {}).setdefault(target, rel.as_posix())
    return graph


def _cycles(graph: dict[str, dict[str, str]]) -> list[set[str]]:
    """The groups of units that import each other, directly or through others (strongly
    connected components of more than one unit, Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[set[str]] = []

    def visit(unit: str) -> None:
        index[unit] = low[unit] = len(index)
        stack.append(unit)
        for target in graph.get(unit, {}):
            if target not in index:
                visit(target)
                low[unit] = min(low[unit], low[target])
            elif target in stack:
                low[unit] = min(low[unit], index[target])
        if low[unit] == index[unit]:
            group = set()
            while True:
                member = stack.pop()
                group.add(member)
                if member == unit:
                    break
            if len(group) > 1:
                found.append(group)

    for unit in sorted(graph):
        if unit not in index:
            visit(unit)
    return found


#: The run's packages, top to bottom: each imports only those after it (never one before).
RUN_LAYERS = ["flows.cli", "flows.triggers", "flows.runs", "flows.prefect", "flows.execution", "flows.runtime",
              "flows.submissions", "flows.store"]


def test_the_packages_import_downwards_only() -> None:
    graph = _package_graph()
    knots = _cycles(graph)
    described = []
    for group in knots:
        edges = [f"{a} imports {b} ({graph[a][b]})" for a in sorted(group) for b in sorted(graph.get(a, {})) if b in group]
        described.append("; ".join(edges))
    assert not knots, "packages that import each other:\n" + "\n".join(described)
    upward = [f"{a} imports {b} ({graph[a][b]})" for i, a in enumerate(RUN_LAYERS) for b in RUN_LAYERS[:i]
              if b in graph.get(a, {})]
    assert not upward, "\n".join(upward)


def test_the_layering_check_finds_a_knot() -> None:
    graph = {"a": {"b": "a.py"}, "b": {"c": "b.py"}, "c": {"a": "c.py"}, "d": {"a": "d.py"}}
    assert _cycles(graph) == [{"a", "b", "c"}]
    assert _cycles({"a": {"b": "a.py"}, "b": {}}) == []


def test_every_hook_of_a_moment_resolves() -> None:
    import importlib

    from flows import moments

    missing = []
    for moment, targets in moments.HOOKS.items():
        for target in targets:
            module, _, attribute = target.partition(":")
            if not callable(getattr(importlib.import_module(module), attribute, None)):
                missing.append(f"{moment}: {target}")
    assert not missing, "\n".join(missing)


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
    """A run's status is written by the run owner (flows/runs/) and the flow body's recorder while
    it executes (flows/execution/), and nowhere else in the product: every other module asks the
    run owner (``flows.runs``)."""
    writers = []
    for path in _modules("flows", "ui"):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith(("flows/runs/", "flows/execution/", "flows/store/")):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr in ("set_run_status", "create_run", "mark_stale_runs_crashed"):
                writers.append(f"{rel}:{node.lineno} calls {node.func.attr}")
    assert not writers, "\n".join(writers)
