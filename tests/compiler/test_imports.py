"""The compiler is pure: importing any of its modules must not pull in the runtime's heavy
dependencies (prefect, sqlmodel, litellm), so that checking definitions stays fast and works in
a CI job that has only the compiler's own dependencies in use.

Each module is imported in a fresh interpreter, because this test process may already have
imported those packages for other tests.
"""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FORBIDDEN = ("prefect", "sqlmodel", "litellm")


def compiler_modules() -> list[str]:
    import compiler

    names = ["compiler"]
    for info in pkgutil.walk_packages(compiler.__path__, prefix="compiler."):
        names.append(info.name)
    return sorted(names)


_PROBE = """
import importlib, json, sys
mods = json.loads(sys.argv[1])
forbidden = json.loads(sys.argv[2])
out = {}
for name in mods:
    importlib.import_module(name)
    out[name] = sorted({m.split(".")[0] for m in sys.modules} & set(forbidden))
print(json.dumps(out))
"""


def test_there_are_compiler_modules() -> None:
    mods = compiler_modules()
    assert "compiler.passes" in mods and len(mods) > 5, mods


def test_compiler_does_not_import_runtime_packages() -> None:
    """Import every compiler module, one after the other, in one fresh interpreter.

    The probe records the forbidden packages present after each import, so the first module
    listed with a package is the one that pulled it in. (One interpreter rather than one per
    module: starting ~30 interpreters costs more than the rest of the compiler tests.)
    """
    mods = compiler_modules()
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE, json.dumps(mods), json.dumps(FORBIDDEN)],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    after = json.loads(proc.stdout.strip().splitlines()[-1])
    offenders = {m: v for m, v in after.items() if v}
    culprit = next(iter(sorted(offenders, key=mods.index)), None)
    assert not offenders, (
        f"importing {culprit} loads {', '.join(offenders[culprit])}: the compiler must not import the runtime's "
        f"packages (modules imported after it also show them: {sorted(offenders)})"
    )
