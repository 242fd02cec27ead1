"""The pytest plugin, as a user meets it: ``python -m pytest`` in a project folder collects its
``*.test.yaml`` files, each case an item that passes or fails with ``ergon test``'s differences.

Runs pytest in a subprocess in a fresh folder (the plugin is found through its installed entry
point, as in a user's environment), and checks that this repository's own pytest run does not
collect the shipped definitions' test files.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROCESS = """\
format_version: 1
kind: process
process: quote
initial: price
context:
  schema:
    type: object
    properties:
      amount: {type: number}
      price: {type: number}
    required: [amount]
nodes:
  price:
    type: tool
    tool: quote_price
    input: {amount: "{{ amount }}"}
    writes: [price]
    transitions: [{to: done}]
  done:
    type: final
"""

TOOL = '''\
from flows.tools import tool


@tool
def quote_price(amount: float) -> dict:
    """Twenty percent on top."""
    return {"price": round(amount * 1.2, 2)}
'''

TESTS = """\
definition: quote
cases:
  - name: ten costs twelve
    inputs: {amount: 10}
    expect: {outcome: done, context: {price: 12}}
  - name: a wrong expectation
    inputs: {amount: 10}
    expect: {outcome: done, context: {price: 13}}
"""


def _pytest(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTEST_", "ERGON_")) and k not in ("PYTHONPATH",)}
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=300)


def _project(root: Path, tests: str = TESTS) -> Path:
    (root / "definitions" / "tests").mkdir(parents=True)
    (root / "definitions" / "tools").mkdir()
    (root / "definitions" / "quote.yaml").write_text(PROCESS)
    (root / "definitions" / "tools" / "quote.py").write_text(TOOL)
    (root / "definitions" / "tests" / "quote.test.yaml").write_text(tests)
    return root


def test_pytest_collects_each_case_and_shows_the_difference_of_a_failing_one(tmp_path) -> None:
    done = _pytest(_project(tmp_path), "-v")
    out = done.stdout
    assert done.returncode == 1, out + done.stderr
    assert "quote.test.yaml::ten costs twelve PASSED" in out
    assert "quote.test.yaml::a wrong expectation FAILED" in out
    assert "context.price: expected 13, got 12.0" in out
    assert "Traceback" not in out


def test_a_test_file_with_problems_fails_its_items_with_file_line_col(tmp_path) -> None:
    broken = TESTS.replace("expect: {outcome: done, context: {price: 12}}", "expect: {outcome: dne}")
    done = _pytest(_project(tmp_path, broken))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "definitions/tests/quote.test.yaml:5:23: error[unknown-outcome]" in done.stdout
    assert "did you mean `done`?" in done.stdout


def test_pytest_without_the_plugin_collects_nothing_from_test_files(tmp_path) -> None:
    done = _pytest(_project(tmp_path), "-p", "no:ergon")
    assert done.returncode == 5, done.stdout  # no tests collected


def test_this_repositorys_own_run_does_not_collect_the_shipped_test_files() -> None:
    # the suite's paths are `tests/` only, and no test file lives there: the definitions' test
    # files are run by `ergon test` (in CI before the suite), not a second time by pytest
    assert 'testpaths = ["tests"]' in (ROOT / "pyproject.toml").read_text()
    assert not list((ROOT / "tests").rglob("*.test.yaml"))
    assert list((ROOT / "definitions" / "tests").glob("*.test.yaml"))
