"""Ergon against a secured Prefect server, configured the way Prefect documents it.

A second, real local Prefect server runs here with basic auth (``PREFECT_SERVER_API_AUTH_STRING``)
and CSRF protection (``PREFECT_SERVER_API_CSRF_PROTECTION_ENABLED``). The ``ergon`` processes are
told about it only through Prefect's own client settings — ``PREFECT_API_URL`` and
``PREFECT_API_AUTH_STRING`` in the environment, or in a Prefect profile — and every path of Ergon
that talks to Prefect must then work: the run, the answer that resumes it, the crash clean-up of
``ergon runs list``; and credentials Prefect refuses must give one clear line, not a traceback.

Every subprocess gets an environment built here: the test session's own ``PREFECT_*`` settings
(its server's address among them) are left out.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.prefect

ERGON = [sys.executable, "-m", "flows.cli"]
AUTH = "admin:pass"
START_TIMEOUT = 180

REVIEW = """
format_version: 1
process: {name}
initial: review
context:
  schema:
    type: object
    properties:
      decision: {{type: string}}
nodes:
  review:
    type: human_task
    task:
      title: Review
      fields:
        - {{name: decision, type: select, required: true, options: [approve, reject]}}
    writes: [decision]
    transitions: [{{to: done}}]
  done: {{type: final}}
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _without_prefect_settings() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}


def _health(api: str) -> bool:
    try:  # the test's own server; `/health` needs no credentials
        with urllib.request.urlopen(f"{api}/health", timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


@pytest.fixture(scope="module")
def secured_api(tmp_path_factory) -> str:
    """A local Prefect server with basic auth and CSRF protection; its API's address."""
    home = tmp_path_factory.mktemp("secured-prefect")
    port = _free_port()
    api = f"http://127.0.0.1:{port}/api"
    env = {**_without_prefect_settings(), "PREFECT_HOME": str(home),
           "PREFECT_SERVER_API_AUTH_STRING": AUTH, "PREFECT_SERVER_API_CSRF_PROTECTION_ENABLED": "true",
           "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "PREFECT_UI_ENABLED": "false"}
    log = home / "server.log"
    with open(log, "ab") as out:
        proc = subprocess.Popen([sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1",
                                 "--port", str(port)], env=env, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not _health(api):
            assert proc.poll() is None, f"the secured server exited: {log.read_text()[-2000:]}"
            assert time.monotonic() < deadline, f"the secured server did not start: {log.read_text()[-2000:]}"
            time.sleep(0.3)
        yield api
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _ergon_env(tmp_path: Path, store: str, definitions: Path, token: str, **prefect: str) -> dict[str, str]:
    """An `ergon` process's environment: this test's home, store and definitions, acting with
    ``token``, and no Prefect settings but ``prefect``."""
    return {**_without_prefect_settings(), "ERGON_HOME": str(tmp_path / "home"), "ERGON_DATABASE_URL": store,
            "ERGON_DEFINITIONS": str(definitions), "ERGON_TOKEN": token, "COLUMNS": "200", **prefect}


def _ergon(args: list[str], env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(ERGON + args, env=env, capture_output=True, text=True, timeout=timeout,
                          cwd=env.get("ERGON_HOME"))


def _start(name: str, env: dict[str, str]) -> subprocess.Popen:
    Path(env["ERGON_HOME"]).mkdir(parents=True, exist_ok=True)
    return subprocess.Popen(ERGON + ["run", name, "--json"], env=env, cwd=env["ERGON_HOME"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _waiting_task(run_name: str, proc: subprocess.Popen, timeout: float = 120.0):
    """The pending task of the run of ``run_name`` once the run is paused."""
    from flows.store import runs as run_store
    from flows.store import tasks as task_store

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            out, err = proc.communicate()
            raise AssertionError(f"`ergon run` ended before its task was asked (code {proc.returncode}): {out}{err}")
        rows, _ = task_store.list_tasks(status="pending")
        for task in rows:
            run = run_store.get_run(task.run_id)
            if run.definition_name == run_name and run.status == "paused":
                return task
        time.sleep(0.2)
    raise AssertionError(f"no pending task for {run_name}")


def _finish(proc: subprocess.Popen) -> dict:
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, out + err
    return json.loads(out.strip().splitlines()[-1])


def _flow_run_state(api: str, flow_run_id: str) -> str:
    from prefect.client.orchestration import SyncPrefectClient

    with SyncPrefectClient(api, auth_string=AUTH) as client:
        flow_run = client.read_flow_run(flow_run_id)  # type: ignore[arg-type]
    return flow_run.state.type.value if flow_run.state else "NONE"


def _profile(tmp_path: Path, **settings: str) -> Path:
    path = tmp_path / "profiles.toml"
    body = "\n".join(f'{key} = "{value}"' for key, value in settings.items())
    path.write_text(f'active = "secured"\n\n[profiles.secured]\n{body}\n')
    return path


def _answered_and_completed(api: str, env: dict[str, str], definitions: Path, name: str, answerer: str) -> None:
    from flows.store import runs as run_store

    (definitions / f"{name}.yaml").write_text(REVIEW.format(name=name))
    proc = _start(name, env)
    try:
        task = _waiting_task(name, proc)
        answered = _ergon(["tasks", "answer", task.id, "--set", "decision=approve", "--token", answerer], env)
        assert answered.returncode == 0, answered.stdout + answered.stderr
        result = _finish(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert result["status"] == "completed" and result["context"]["decision"] == "approve", result
    run = run_store.get_run(task.run_id)
    assert run.status == "completed"
    assert _flow_run_state(api, run.prefect_flow_run_id) == "COMPLETED"


def test_an_answer_resumes_a_run_on_a_secured_server_configured_in_the_environment(
        secured_api, store, definitions, tokens, tmp_path):
    env = _ergon_env(tmp_path, store, definitions, tokens["starter"],
                     PREFECT_API_URL=secured_api, PREFECT_API_AUTH_STRING=AUTH)
    _answered_and_completed(secured_api, env, definitions, "secured_env", tokens["ann"])


def test_an_answer_resumes_a_run_on_a_secured_server_configured_in_a_prefect_profile(
        secured_api, store, definitions, tokens, tmp_path):
    """The address and the credentials are in the profile only (``PREFECT_PROFILES_PATH``, as
    ``prefect profile create`` / ``prefect config set`` would write them): nothing in the
    environment names them."""
    profiles = _profile(tmp_path, PREFECT_API_URL=secured_api, PREFECT_API_AUTH_STRING=AUTH)
    env = _ergon_env(tmp_path, store, definitions, tokens["starter"], PREFECT_PROFILES_PATH=str(profiles))
    _answered_and_completed(secured_api, env, definitions, "secured_profile", tokens["ann"])
    assert not (tmp_path / "home" / "prefect" / "server.json").exists(), "Ergon started a local server of its own"


def test_a_run_killed_while_it_waits_is_crashed_on_the_secured_server(
        secured_api, store, definitions, tokens, tmp_path):
    from flows.store import runs as run_store
    from flows.store import tasks as task_store

    env = _ergon_env(tmp_path, store, definitions, tokens["starter"],
                     PREFECT_API_URL=secured_api, PREFECT_API_AUTH_STRING=AUTH)
    (definitions / "secured_kill.yaml").write_text(REVIEW.format(name="secured_kill"))
    proc = _start("secured_kill", env)
    try:
        task = _waiting_task("secured_kill", proc)
        run = run_store.get_run(task.run_id)
        waiting = task_store.get_task(task.id).prefect_flow_run_id
        assert run.prefect_flow_run_id and waiting
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    listed = _ergon(["runs", "list", "--json"], env)
    assert listed.returncode == 0, listed.stdout + listed.stderr
    [row] = [r for r in json.loads(listed.stdout)["runs"] if r["run_id"] == run.id]
    assert row["status"] == "crashed"
    states = {flow_run_id: _flow_run_state(secured_api, flow_run_id) for flow_run_id in {run.prefect_flow_run_id, waiting}}
    assert set(states.values()) == {"CRASHED"}, (states, listed.stderr)
    assert "Traceback" not in listed.stderr, listed.stderr


def test_credentials_the_secured_server_refuses_give_one_clear_line(
        secured_api, store, definitions, tokens, tmp_path):
    """The run starts with the right credentials; the answer is given with wrong ones: it is
    recorded, and the CLI says in one line that Prefect refused the credentials."""
    good = _ergon_env(tmp_path, store, definitions, tokens["starter"],
                      PREFECT_API_URL=secured_api, PREFECT_API_AUTH_STRING=AUTH)
    wrong = {**good, "PREFECT_API_AUTH_STRING": "admin:wrong"}
    (definitions / "secured_wrong.yaml").write_text(REVIEW.format(name="secured_wrong"))
    proc = _start("secured_wrong", good)
    try:
        task = _waiting_task("secured_wrong", proc)
        answered = _ergon(["tasks", "answer", task.id, "--set", "decision=approve", "--token", tokens["ann"]], wrong)
    finally:
        proc.kill()
        proc.wait()
    assert answered.returncode == 1, answered.stdout + answered.stderr
    lines = answered.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in answered.stderr, answered.stderr
    assert "the answer is recorded, but the run was not resumed" in lines[0]
    assert "401" in lines[0] and "PREFECT_API_AUTH_STRING" in lines[0], lines[0]
