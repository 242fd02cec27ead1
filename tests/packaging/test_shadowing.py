"""A user's own ``flows``/``compiler``/``ui`` package in the project folder, with Ergon installed from its wheel.

Python run in a folder imports that folder's packages first (``python -m``; Prefect puts the
working folder on ``sys.path`` before it imports a deployment's entrypoint), so a regular package
or a module of one of Ergon's top-level names would be imported instead of Ergon: the tests show
that failure with the installed wheel, then that every ``ergon`` command refuses to work in such a
folder with one line naming it and the fix, and that a folder without ``__init__.py`` (a namespace
package) is harmless and not refused. Every command is the installed virtualenv's ``ergon``
(:mod:`installed`) run in a temporary folder; none of them gets as far as Prefect or the store.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from installed import run_in  # noqa: E402


@pytest.fixture
def env(tmp_path) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items()
             if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME") and not k.startswith(("ERGON_", "PREFECT_"))}
    home = tmp_path / "home"
    home.mkdir()
    # a Prefect API nothing listens on: a command that got past the refusal starts no server of its own
    return {**clean, "HOME": str(home), "ERGON_HOME": str(tmp_path / "ergon-home"), "COLUMNS": "200",
            "PREFECT_API_URL": "http://127.0.0.1:9/api"}


@pytest.fixture
def project(venv, env, tmp_path) -> Path:
    """`ergon init`'s project with the user's own ``flows`` package beside ``definitions/``."""
    folder = tmp_path / "my-repo"
    folder.mkdir()
    assert run_in(venv, folder, env, "init").returncode == 0
    (folder / "flows").mkdir()
    (folder / "flows" / "__init__.py").write_text("")
    (folder / "flows" / "etl.py").write_text("def load():\n    return 1\n")
    return folder


def _python(venv: Path, cwd: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(venv / "bin" / "python"), *args], cwd=cwd, env={**env, "PWD": str(cwd)},
                          capture_output=True, text=True, timeout=120)


def test_the_users_package_is_imported_instead_of_ergon(venv, project, env):
    """What the refusal prevents: Prefect's import of a deployment's entrypoint from this folder."""
    loaded = _python(venv, project, env, "-c", "from prefect.utilities.importtools import load_module; "
                     "load_module('flows.prefect.deployments')")
    assert loaded.returncode == 1 and "No module named 'flows.prefect'" in loaded.stderr, loaded.stderr[-2000:]
    cli = _python(venv, project, env, "-m", "flows.cli", "check")
    assert cli.returncode == 1 and "No module named flows.cli" in cli.stderr, cli.stderr


@pytest.mark.parametrize("args", [("check",), ("deploy", "hello_process"), ("run", "hello_process", "--input", "name=Ada"),
                                  ("serve",), ("ui",), ("runs", "list")])
def test_a_command_refuses_with_the_folder_and_the_fix(venv, project, env, args):
    done = run_in(venv, project, env, *args, timeout=120)
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stderr.splitlines() == [
        f"error: flows/ in {project} is a Python package (flows/__init__.py) named like Ergon's `flows`: Python run "
        "in this folder (a Prefect worker's flow run, `prefect deploy`) would import it instead of Ergon and fail; "
        "rename it, e.g. `git mv flows pipelines`, and update its imports"], done.stderr
    assert done.stdout == ""
    assert "deployments: []" in (project / "prefect.yaml").read_text(), "nothing deployed"


def test_from_a_subfolder_the_projects_folder_is_checked(venv, project, env):
    below = project / "definitions"
    done = run_in(venv, below, env, "check")
    assert done.returncode == 1 and f"flows/ in {project} is a Python package" in done.stderr, done.stderr
    helped = run_in(venv, project, env, "check", "--help")
    assert helped.returncode == 0 and "Usage: ergon check" in helped.stdout, "a command's help is still shown"


def test_init_refuses_a_folder_with_a_module_of_ergons_name_and_writes_nothing(venv, env, tmp_path):
    folder = tmp_path / "scripts-repo"
    folder.mkdir()
    (folder / "ui.py").write_text("print('my dashboard')\n")
    done = run_in(venv, tmp_path, env, "init", str(folder))
    assert done.returncode == 1
    assert done.stderr.startswith(f"error: ui.py in {folder} is a Python module named like Ergon's `ui`")
    assert "`git mv ui.py webapp.py`" in done.stderr and "Traceback" not in done.stderr
    assert sorted(p.name for p in folder.iterdir()) == ["ui.py"], "nothing written"

    (folder / "ui.py").rename(folder / "webapp.py")
    assert run_in(venv, folder, env, "init").returncode == 0, "renamed as told, init goes through"


def test_a_folder_without_init_py_is_harmless_and_not_refused(venv, env, tmp_path):
    folder = tmp_path / "site-repo"
    folder.mkdir()
    assert run_in(venv, folder, env, "init").returncode == 0
    (folder / "ui").mkdir()
    (folder / "ui" / "index.html").write_text("<p>our site</p>\n")
    (folder / "compiler").mkdir()
    (folder / "compiler" / "make_report.py").write_text("print('report')\n")
    (folder / "flows").mkdir()
    (folder / "flows" / "README.md").write_text("our Prefect flows live elsewhere\n")

    probe = ("import importlib.util, json, sys; "
             "print(json.dumps({n: importlib.util.find_spec(n).origin for n in "
             "('flows.prefect.deployments', 'compiler.errors', 'ui.serve')}))")
    found = _python(venv, folder, env, "-c", probe)
    assert found.returncode == 0, found.stderr
    for name, origin in json.loads(found.stdout).items():
        assert Path(origin).resolve().is_relative_to(venv.resolve()), f"{name} came from {origin}, not the installed Ergon"

    checked = run_in(venv, folder, env, "check")
    assert checked.returncode == 0 and "0 error(s)" in checked.stdout, checked.stdout + checked.stderr
