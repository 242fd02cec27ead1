"""Every `ergon` command run from a subfolder of a project uses that project, as git and dbt do.

The project's root is the nearest folder upward holding ``definitions/``, ``prefect.yaml`` or an
``ergon.toml``; the command says on stderr which root it uses when it is not the current folder.
The commands run as a user types them: the virtualenv's ``ergon`` in a subprocess, with no
``ERGON_*`` variable and a home of its own (Prefect's API, where a run needs one, is named the
way Prefect documents: ``PREFECT_API_URL``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ERGON = str(Path(sys.executable).parent / "ergon")


@pytest.fixture
def user(tmp_path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ERGON_", "PREFECT_")) and k != "PYTHONPATH"}
    return {**env, "HOME": str(home), "COLUMNS": "200"}


def ergon(cwd: Path, env: dict[str, str], *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([ERGON, *args], cwd=cwd, env={**env, "PWD": str(cwd)}, input=stdin, capture_output=True,
                          text=True, timeout=300)


@pytest.fixture
def project(tmp_path, user) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    assert ergon(root, user, "init").returncode == 0
    return root


def test_a_subfolder_uses_the_projects_definitions_and_store(project, user):
    deep = project / "notes" / "2026"
    deep.mkdir(parents=True)
    at_root = ergon(project, user, "check")
    assert at_root.returncode == 0 and "using the project" not in at_root.stderr
    checked = ergon(deep, user, "check")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.splitlines()[-1] == at_root.stdout.splitlines()[-1], "the same definitions are checked"
    assert f"using the project at {project}" in checked.stderr

    assert ergon(project, user, "secrets", "set", "api_key", stdin="hunter2\n").returncode == 0
    listed = ergon(deep, user, "secrets", "list")
    assert listed.returncode == 0 and "api_key" in listed.stdout, listed.stdout + listed.stderr
    assert not (deep / ".ergon").exists() and not (project / "notes" / ".ergon").exists(), "no second store"


def test_a_path_argument_means_what_it_names_from_where_it_was_typed(project, user):
    definitions = project / "definitions"
    checked = ergon(definitions, user, "check", "hello_process.yaml")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "1 definition(s) checked" in checked.stdout
    assert f"using the project at {project}" in checked.stderr
    (definitions / "interactions" / "broken.yaml").write_text("kind: interaction\nname: broken\n")
    refused = ergon(definitions / "interactions", user, "check", "--json", "broken.yaml")
    assert refused.returncode == 1
    found = json.loads(refused.stdout)
    assert found and all(d["file"] == str(definitions / "interactions" / "broken.yaml") for d in found)


def test_an_ergon_toml_marks_a_root_and_a_folder_of_no_project_stays_itself(tmp_path, user):
    root = tmp_path / "elsewhere" / "pipelines"
    (root / "src" / "jobs").mkdir(parents=True)
    (root / "ergon.toml").write_text("")
    done = ergon(root / "src" / "jobs", user, "secrets", "list")
    assert done.returncode == 0, done.stderr
    assert f"using the project at {root}" in done.stderr
    assert (root / ".ergon").is_dir() and not (root / "src" / "jobs" / ".ergon").exists()

    lone = tmp_path / "lone"
    lone.mkdir()
    done = ergon(lone, user, "secrets", "list")
    assert done.returncode == 0 and "using the project" not in done.stderr
    assert (lone / ".ergon").is_dir()


def test_init_in_a_subfolder_makes_a_project_there(project, user):
    nested = project / "examples" / "other"
    nested.mkdir(parents=True)
    done = ergon(nested, user, "init")
    assert done.returncode == 0 and "using the project" not in done.stderr
    assert (nested / "definitions" / "hello_process.yaml").is_file()


@pytest.mark.prefect
def test_a_run_from_a_subfolder_is_the_projects_run(project, user, prefect_api):
    env = {**user, "PREFECT_API_URL": os.environ["PREFECT_API_URL"]}
    sub = project / "definitions" / "tools"
    ran = ergon(sub, env, "run", "hello_process", "--input", "name=Ada", "--json")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    run_id = json.loads(ran.stdout.strip().splitlines()[-1])["run_id"]
    assert f"using the project at {project}" in ran.stderr
    assert not (sub / ".ergon").exists() and not (sub / "prefect.toml").exists()
    listed = ergon(project, env, "runs", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert run_id in listed.stdout, "the run is in the project's store"
