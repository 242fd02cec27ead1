"""A new project's first steps, run as a user runs them: ``ergon init`` writes a test for each
example, and ``ergon test`` (then ``pytest``) passes on them in the fresh folder, with no model
key, no server and nothing else installed or configured."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ERGON = Path(sys.executable).with_name("ergon")


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("ERGON_", "PYTEST_", "OPENAI_"))}


def test_ergon_init_then_ergon_test_passes_in_a_fresh_folder(tmp_path) -> None:
    project = tmp_path / "shop"
    made = subprocess.run([str(ERGON), "init", str(project)], capture_output=True, text=True, env=_env(), timeout=300)
    assert made.returncode == 0, made.stdout + made.stderr
    tests = sorted(p.name for p in (project / "definitions" / "tests").glob("*.test.yaml"))
    examples = sorted(f"{p.stem}.test.yaml" for p in (project / "definitions").glob("hello_*.yaml"))
    assert tests == examples, "a test for each example"
    assert "ergon test" in made.stdout

    tested = subprocess.run([str(ERGON), "test", "--coverage"], cwd=project, capture_output=True, text=True,
                            env=_env(), timeout=300)
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "5 case(s): 5 passed, 0 failed" in tested.stdout
    assert "coverage hello_process: 100%" in tested.stdout
    assert not (project / ".ergon").exists(), "testing opened no store of the project"

    with_pytest = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=project,
                                 capture_output=True, text=True, env=_env(), timeout=300)
    assert with_pytest.returncode == 0, with_pytest.stdout + with_pytest.stderr
    assert "5 passed" in with_pytest.stdout
