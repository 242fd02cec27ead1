"""`ergon init` writes a `.gitignore` that keeps Ergon's state (`.ergon/`: the store, the secret key) out of git.

The commands run as a user types them (the virtualenv's `ergon`, in a new folder, with no
``ERGON_*``/``PREFECT_*`` variable), and git itself says what it would commit.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ERGON = str(Path(sys.executable).parent / "ergon")

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def user_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ERGON_", "PREFECT_")) and k != "PYTHONPATH"}
    return {**env, "HOME": str(home)}


def ergon(cwd: Path, env: dict[str, str], *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([ERGON, *args], cwd=cwd, env=env, input=stdin, capture_output=True, text=True, timeout=120)


def git_status(cwd: Path) -> tuple[set[str], set[str]]:
    """(untracked, ignored) paths as git reports them."""
    out = subprocess.run(["git", "status", "--porcelain", "--ignored", "--untracked-files=all"], cwd=cwd,
                         capture_output=True, text=True, check=True).stdout
    untracked = {line[3:] for line in out.splitlines() if line.startswith("?? ")}
    ignored = {line[3:] for line in out.splitlines() if line.startswith("!! ")}
    return untracked, ignored


def test_init_ignores_the_store_and_the_secret_key(tmp_path):
    project, home = tmp_path / "repo", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    env = user_env(home)
    subprocess.run(["git", "init", "-q", "."], cwd=project, check=True)
    done = ergon(project, env, "init")
    assert done.returncode == 0, done.stderr
    assert ".gitignore" in done.stdout
    assert ".ergon/" in (project / ".gitignore").read_text().splitlines()

    # what Ergon writes there: the store, the secret key, a tool module's bytecode
    assert ergon(project, env, "secrets", "set", "api_key", stdin="hunter2\n").returncode == 0
    assert ergon(project, env, "runs", "list").returncode == 0
    assert (project / ".ergon" / "ergon.db").is_file() and (project / ".ergon" / "secret.key").is_file()
    cache = project / "definitions" / "tools" / "__pycache__"
    cache.mkdir(exist_ok=True)
    (cache / "greetings.cpython-311.pyc").write_bytes(b"")

    untracked, ignored = git_status(project)
    assert not [p for p in untracked if p.startswith(".ergon") or "__pycache__" in p], untracked
    assert {".ergon/ergon.db", ".ergon/secret.key", "definitions/tools/__pycache__/greetings.cpython-311.pyc"} <= ignored
    assert "definitions/hello_process.yaml" in untracked and ".gitignore" in untracked, "the project itself is committed"


def test_an_existing_gitignore_is_kept_and_completed(tmp_path):
    project, home = tmp_path / "repo", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    (project / ".gitignore").write_text("node_modules/\n__pycache__/")
    done = ergon(project, user_env(home), "init")
    assert done.returncode == 0, done.stderr
    lines = (project / ".gitignore").read_text().splitlines()
    assert lines[:2] == ["node_modules/", "__pycache__/"], "the user's lines come first, unchanged"
    assert ".ergon/" in lines and lines.count("__pycache__/") == 1
    again = ergon(project, user_env(home), "init", "--force")
    assert again.returncode == 0
    assert (project / ".gitignore").read_text().splitlines() == lines, "nothing added twice"
