"""`ergon check` runs without cyclopts and rich when its arguments are only paths and ``--json``
(:mod:`flows.cli.checking`), and prints what the cyclopts path prints: the same diagnostics, summary,
colours and exit status. ``ergon check -- FILE`` is the same command taken through cyclopts (the
``--`` is not a plain path), which is what each case is compared with."""

from __future__ import annotations

import subprocess
import sys

import pytest
from cli_process import ROOT, clean_env, imported, in_a_terminal

GOOD = "definitions/kyc_check.yaml"
BAD = "tests/fixtures/invalid/agent_control_tool.yaml"
#: Imported by the cyclopts path, or by what `ergon check` of definitions alone does not need.
NOT_FOR_CHECK = ("cyclopts", "rich", "markdown_it", "pygments", "prefect", "sqlmodel",
                 "sqlalchemy", "litellm", "streamlit", "flows.store", "flows.runtime", "flows.testing.spec")


def test_check_imports_the_compiler_and_neither_cyclopts_nor_rich() -> None:
    out, modules = imported(["check", GOOD], clean_env())
    assert out == "1 definition(s) checked, 0 error(s)\n"
    assert "compiler" in modules
    for heavy in NOT_FOR_CHECK:
        assert heavy not in modules, f"`ergon check {GOOD}` imported {heavy}"


def _ergon(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "flows.cli", *argv], cwd=ROOT, env=clean_env(), capture_output=True,
                          text=True, timeout=120)


@pytest.mark.parametrize("argv", [[GOOD], [BAD], [GOOD, BAD], [BAD, "--json"], ["--json", GOOD], ["nope.yaml"], []],
                         ids=["good", "bad", "both", "json-after", "json-before", "missing", "folder"])
def test_check_prints_what_the_cyclopts_path_prints(argv: list[str]) -> None:
    paths = [a for a in argv if a != "--json"]
    fast, slow = _ergon("check", *argv), _ergon("check", *(["--json"] if "--json" in argv else []), "--", *paths)
    assert (fast.returncode, fast.stdout, fast.stderr) == (slow.returncode, slow.stdout, slow.stderr)
    if argv == [GOOD]:
        assert fast.returncode == 0 and "1 definition(s) checked, 0 error(s)" in fast.stdout
    if argv == [BAD]:
        assert fast.returncode == 1 and "error[control-tool]" in fast.stdout and "1 error(s)" in fast.stderr


def test_an_option_check_does_not_have_is_refused_by_cyclopts() -> None:
    done = _ergon("check", "--bogus", GOOD)
    assert done.returncode == 2
    assert "Unknown option" in done.stdout + done.stderr and "Traceback" not in done.stderr


def test_in_a_terminal_the_summary_is_coloured_as_rich_colours_it() -> None:
    env = clean_env(TERM="xterm")
    ours = in_a_terminal(["check", GOOD], env, columns=100)
    theirs = in_a_terminal(["check", "--", GOOD], env, columns=100)
    assert ours == theirs
    assert b"\x1b[32m1 definition(s) checked, 0 error(s)\x1b[0m" in ours


def test_in_a_terminal_errors_and_their_summary_are_as_rich_prints_them() -> None:
    env = clean_env(TERM="xterm")
    ours = in_a_terminal(["check", BAD], env, columns=100, stderr_too=True, status=1)
    theirs = in_a_terminal(["check", "--", BAD], env, columns=100, stderr_too=True, status=1)
    assert ours == theirs
    assert b"\x1b[31m1 definition(s) checked, 1 error(s)\x1b[0m" in ours
