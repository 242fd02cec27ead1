"""A data engineer's first steps with Ergon and Prefect, with nothing but what the docs say.

Every command runs from the installed wheel (:mod:`installed`) in a fresh folder, with an
environment that has no ``PREFECT_*`` and no ``ERGON_*`` variable and a home folder of its own
(a new user's: no Prefect profile until the test makes one with Prefect's own command). The
test suite's own Prefect server (``PREFECT_API_URL`` in this process) is reached only where a
test configures it the way a user would: ``prefect config set``.

* the embedded default: ``ergon run`` starts Ergon's local server and writes it into the
  folder's ``prefect.toml``; ``ergon deploy``, the worker command of ``README-ergon.md`` and
  ``prefect deployment run`` then reach that same server with nothing exported;
* a user's profile: ``ergon deploy`` registers with the server the profile names and starts no
  server of its own;
* an API configured after Ergon wrote its line: the profile wins and Ergon's line goes.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from installed import last_json, run_in  # noqa: E402

pytestmark = pytest.mark.prefect


@pytest.fixture
def user(venv, tmp_path) -> dict[str, str]:
    """A new user's environment: the installed virtualenv on PATH, an empty home, nothing else."""
    home = tmp_path / "home"
    home.mkdir()
    env = {"PATH": f"{venv / 'bin'}{os.pathsep}/usr/bin{os.pathsep}/bin", "HOME": str(home), "LANG": "C.UTF-8",
           "COLUMNS": "200"}
    assert not [k for k in env if k.startswith(("PREFECT_", "ERGON_"))]
    return env


@pytest.fixture
def project(tmp_path) -> Path:
    folder = tmp_path / "my-repo"
    folder.mkdir()
    return folder


def prefect_cli(cwd: Path, env: dict[str, str], *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """``prefect ARGS`` as the user types it (the virtualenv's console script)."""
    return subprocess.run(["prefect", *args], cwd=cwd, env={**env, "PWD": str(cwd)}, capture_output=True, text=True,
                          timeout=timeout)


def documented_worker_command(project: Path) -> list[str]:
    """The worker command README-ergon.md gives (the one a user copies)."""
    readme = (project / "README-ergon.md").read_text()
    found = re.search(r"^(prefect worker start[^#\n]*)", readme, re.MULTILINE)
    assert found, "README-ergon.md documents the worker command"
    return found.group(1).split()


def stop_group(proc: subprocess.Popen) -> None:
    """A worker ignores SIGTERM: SIGINT twice, then SIGKILL."""
    for sig in (signal.SIGINT, signal.SIGINT, signal.SIGKILL):
        if proc.poll() is not None:
            return
        try:
            os.killpg(proc.pid, sig)
            proc.wait(timeout=10)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            continue


def test_run_deploy_and_a_documented_worker_reach_one_server_with_nothing_exported(venv, user, project, tmp_path):
    assert run_in(venv, project, user, "init").returncode == 0
    ran = run_in(venv, project, user, "run", "hello_process", "--input", "name=Ada", "--json")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert last_json(ran)["status"] == "completed"

    try:
        deployed = run_in(venv, project, user, "deploy", timeout=600)
        assert deployed.returncode == 0, deployed.stdout + deployed.stderr
        assert "Traceback" not in deployed.stderr
        status = run_in(venv, project, user, "server", "status", "--json")
        assert status.returncode == 0, status.stdout + status.stderr
        server = json.loads(status.stdout)
        assert server["managed"] and server["healthy"] and server["pid"], server
        assert server["source"] == "prefect.toml" and server["where"] == str(project / "prefect.toml")
        assert server["ui_url"] == server["api_url"].removesuffix("/api")
        assert server["api_url"] in (project / "prefect.toml").read_text(), "the folder's prefect.toml names the server"

        worker_command = documented_worker_command(project)
        assert " ".join(worker_command) in deployed.stdout, "ergon deploy prints the documented worker command"

        with open(tmp_path / "worker.log", "wb") as log:
            worker = subprocess.Popen(worker_command, cwd=project, env={**user, "PWD": str(project)}, stdout=log,
                                      stderr=subprocess.STDOUT, start_new_session=True)
        try:
            started = prefect_cli(project, user, "deployment", "run", "hello_process/hello_process",
                                  "--param", "name=Grace")
            assert started.returncode == 0, started.stdout + started.stderr
            assert server["api_url"].removesuffix("/api") in started.stdout, "the flow run is on Ergon's server"

            deadline = time.monotonic() + 240
            run = None
            while time.monotonic() < deadline and run is None:
                listed = run_in(venv, project, user, "runs", "list", "--json")
                assert listed.returncode == 0, listed.stderr
                run = next((r for r in json.loads(listed.stdout)["runs"]
                            if r["trigger"] == "api" and r["status"] in ("completed", "failed", "crashed")), None)
                time.sleep(1)
            assert worker.poll() is None, (tmp_path / "worker.log").read_text(errors="replace")[-3000:]
            assert run is not None, "the worker ran the deployment's flow run:\n" + \
                (tmp_path / "worker.log").read_text(errors="replace")[-3000:]
        finally:
            stop_group(worker)
        assert run["status"] == "completed", run
        shown = run_in(venv, project, user, "runs", "show", run["run_id"], "--json")
        assert json.loads(shown.stdout)["context"]["greeting"] == "Hello, Grace."
    finally:
        assert run_in(venv, project, user, "server", "stop").returncode == 0


def test_deploy_uses_the_api_of_the_users_profile_and_starts_no_server(venv, user, project, prefect_api):
    configured = prefect_cli(project, user, "config", "set", f"PREFECT_API_URL={prefect_api}")
    assert configured.returncode == 0, configured.stdout + configured.stderr
    assert (Path(user["HOME"]) / ".prefect" / "profiles.toml").is_file(), "Prefect wrote the user's profile"
    pool = f"ergon-profile-{uuid.uuid4().hex[:8]}"

    assert run_in(venv, project, user, "init").returncode == 0
    deployed = run_in(venv, project, user, "deploy", "hello_process", "--work-pool", pool, timeout=600)
    assert deployed.returncode == 0, deployed.stdout + deployed.stderr
    assert f"registered with the Prefect API at {prefect_api}" in deployed.stdout
    assert "profile" in deployed.stdout and "profiles.toml" in deployed.stdout, "it says where the API comes from"
    assert not (project / ".ergon" / "prefect" / "server.json").exists(), "no local server was started"
    assert not (project / "prefect.toml").exists(), "the user's configuration is left as it is"

    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        deployment = client.read_deployment_by_name("hello_process/hello_process")
    assert deployment.work_pool_name == pool, "registered on the profile's server"

    status = run_in(venv, project, user, "server", "status", "--json")
    assert json.loads(status.stdout) | {"where": None} == {
        "api_url": prefect_api, "ui_url": prefect_api.removesuffix("/api"), "healthy": True, "managed": False,
        "pid": None, "source": "profile", "where": None}
    refused = run_in(venv, project, user, "server", "start")
    assert refused.returncode == 1 and "Ergon uses it and starts no server" in refused.stderr, refused.stderr


def test_an_api_configured_later_replaces_ergons_line_in_prefect_toml(venv, user, project, prefect_api):
    assert run_in(venv, project, user, "init").returncode == 0
    # what `ergon run` leaves after starting its local server, the server since gone
    (project / "prefect.toml").write_text('[logging]\nlevel = "INFO"\n\n[api]\n'
                                          'url = "http://127.0.0.1:9/api" # ergon-local-server\n')
    assert prefect_cli(project, user, "config", "set", f"PREFECT_API_URL={prefect_api}").returncode == 0

    status = run_in(venv, project, user, "server", "status", "--json")
    assert json.loads(status.stdout)["api_url"] == prefect_api, "status names the API Ergon will use"
    ran = run_in(venv, project, user, "run", "hello_process", "--input", "name=Ada", "--json")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert last_json(ran)["status"] == "completed"
    assert f"Prefect API {prefect_api}" in ran.stderr and "prefect.toml" in ran.stderr, "it says what changed"
    assert (project / "prefect.toml").read_text() == '[logging]\nlevel = "INFO"\n\n', "only Ergon's line went"
    assert not (project / ".ergon" / "prefect" / "server.json").exists(), "no local server was started"


def test_a_configured_server_that_is_down_is_one_sentence_not_a_traceback(venv, user, project):
    assert prefect_cli(project, user, "config", "set", "PREFECT_API_URL=http://127.0.0.1:9/api").returncode == 0
    assert run_in(venv, project, user, "init").returncode == 0
    ran = run_in(venv, project, user, "run", "hello_process", "--input", "name=Ada")
    assert ran.returncode == 1 and "Traceback" not in ran.stderr, ran.stderr
    assert "cannot reach Prefect's API at http://127.0.0.1:9/api (profile" in ran.stderr, ran.stderr
    assert not (project / ".ergon" / "prefect" / "server.json").exists(), "no local server replaces the user's"
