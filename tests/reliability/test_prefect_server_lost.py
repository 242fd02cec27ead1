"""Ergon's local Prefect server killed (SIGKILL) while a run waits for a person.

As a user meets it: a fresh project folder, nothing of Prefect configured, ``ergon run`` starts
Ergon's local server and waits at a human task; the server is killed. Then:

* answered within the run's patience (``ergon tasks answer`` starts the server again, on the
  port it had): the waiting process takes the answer up and the run completes;
* nobody brings the server back: the run is recorded ``crashed`` with the API named, its process
  exits, and answering the task later resumes it from its checkpoint to the end;
* the process stopped with SIGTERM while the server is down: it records the crash and exits at
  once instead of retrying the dead server (Prefect's client backs off for half an hour).

Every ``ergon`` command here runs in the project's folder with no ``PREFECT_*`` address and no
``ERGON_HOME``, as the README's first steps do (the folder's ``prefect.toml`` and ``.ergon/``).
"""

from __future__ import annotations

import json
import socket
import urllib.request
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.prefect

DEFINITION = """\
format_version: 1
process: approve
initial: review
context:
  schema:
    type: object
    properties:
      decision: {type: string}
nodes:
  review:
    type: human_task
    task:
      title: Approve
      fields:
        - {name: decision, type: select, required: true, options: [approve, reject]}
    writes: [decision]
    transitions: [{to: done}]
  done:
    type: final
"""


@pytest.fixture
def project(tmp_path):
    """A project folder with one definition; its local Prefect server stopped afterwards."""
    (tmp_path / "approve.yaml").write_text(DEFINITION)
    yield tmp_path
    subprocess.run([sys.executable, "-m", "flows.cli", "server", "stop"], cwd=tmp_path, env=_env(),
                   capture_output=True, timeout=60)


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("ERGON_HOME", "ERGON_DATABASE_URL", "PREFECT_API_URL", "PREFECT_UI_API_URL")}
    return {**env, **extra}


def _ergon(project: Path, *args: str, timeout: float = 120, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "flows.cli", *args], cwd=project, env=_env(**env),
                          capture_output=True, text=True, timeout=timeout)


def _server(project: Path) -> dict:
    return json.loads((project / ".ergon" / "prefect" / "server.json").read_text())


def _waiting_run(project: Path, **env: str) -> tuple[subprocess.Popen, Path, str]:
    """``ergon run approve.yaml`` in the background until it waits at its task; (process, output, task id)."""
    out = project / "run.out"
    proc = subprocess.Popen([sys.executable, "-m", "flows.cli", "run", "approve.yaml"], cwd=project,
                            env=_env(**env), stdout=out.open("w"), stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        text = out.read_text()
        if "waits for a person" in text:
            task_id = text.split("ergon tasks answer ", 1)[1].split()[0]
            return proc, out, task_id
        assert proc.poll() is None, text
        time.sleep(0.2)
    proc.kill()
    raise AssertionError(f"the run never waited at its task:\n{out.read_text()}")


def _kill_server(project: Path) -> int:
    state = _server(project)
    os.kill(state["pid"], signal.SIGKILL)
    while _alive(state["pid"]):
        time.sleep(0.05)
    return state["port"]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return not Path(f"/proc/{pid}/stat").exists() or Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"


def _only_run(project: Path) -> dict:
    listed = _ergon(project, "runs", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    runs = json.loads(listed.stdout)["runs"]
    assert len(runs) == 1, runs
    return runs[0]


def _exited_within(proc: subprocess.Popen, seconds: float) -> float:
    started = time.monotonic()
    try:
        proc.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise AssertionError(f"the run's process was still waiting {seconds:.0f} s later") from None
    return time.monotonic() - started


def test_a_run_waiting_when_the_server_dies_takes_the_answer_given_after_its_restart(project):
    proc, out, task_id = _waiting_run(project)
    port = _kill_server(project)
    time.sleep(3)  # the waiting process's poll meets the dead port

    answered = _ergon(project, "tasks", "answer", task_id, "--set", "decision=approve")
    assert answered.returncode == 0, answered.stdout + answered.stderr
    assert _server(project)["port"] == port, "the restarted server must take its old port: the run waits on it"

    _exited_within(proc, 120)
    text = out.read_text()
    assert proc.returncode == 0, text
    assert "completed" in text and "Traceback" not in text, text
    run = _only_run(project)
    assert run["status"] == "completed", run


def test_a_run_whose_server_stays_down_records_a_crash_exits_and_resumes_with_a_later_answer(project):
    proc, out, task_id = _waiting_run(project, ERGON_API_LOST_SECONDS="10")
    _kill_server(project)

    # it gives the API 10 s (checked every 5 s), then records the crash and ends its process
    _exited_within(proc, 60)
    text = out.read_text()
    assert "Traceback" not in text, text
    assert text.count("Error logging to API") <= 3, f"the dead server's errors repeat:\n{text}"
    assert "did not answer for" in text, text

    run = _only_run(project)  # (this starts the server again, as any command that needs Prefect)
    assert run["status"] == "crashed", run
    assert "Prefect's API at http://127.0.0.1:" in run["error"] and "ERGON_API_LOST_SECONDS" in run["error"], run

    answered = _ergon(project, "tasks", "answer", task_id, "--set", "decision=approve")
    assert answered.returncode == 0, answered.stdout + answered.stderr
    assert "resumes from its checkpoint" in answered.stdout, answered.stdout
    deadline = time.monotonic() + 120
    while (run := _only_run(project))["status"] != "completed" and time.monotonic() < deadline:
        time.sleep(1)
    assert run["status"] == "completed" and run["outcome"] == "done", run


def test_a_run_stopped_while_its_server_is_down_exits_at_once(project):
    proc, out, _ = _waiting_run(project)
    _kill_server(project)
    time.sleep(2)
    proc.send_signal(signal.SIGTERM)
    took = _exited_within(proc, 40)
    text = out.read_text()
    assert "Traceback" not in text, text
    assert _only_run(project)["status"] == "crashed"
    print(f"exited {took:.1f} s after SIGTERM")


def _user_server(home: Path, port: int) -> subprocess.Popen:
    """A Prefect server of the user's own (not Ergon's), with its database in ``home``."""
    env = {**_env(), "PREFECT_HOME": str(home), "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
           "PREFECT_SERVER_LOGGING_LEVEL": "WARNING"}
    proc = subprocess.Popen([sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1",
                             "--port", str(port)], env=env, cwd=home, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the Prefect server did not start"
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/health", timeout=2):
                return proc
        except OSError:
            time.sleep(0.3)
    raise AssertionError("the Prefect server did not answer")


def test_an_answer_recorded_while_the_users_server_was_down_reaches_the_run_when_it_is_back(tmp_path):
    """The user's own server: ``ergon tasks answer`` cannot restart it, so Prefect never hands the
    answer over; the waiting run takes it from the store once the server is back."""
    project, home = tmp_path / "project", tmp_path / "prefect-home"
    project.mkdir()
    home.mkdir()
    (project / "approve.yaml").write_text(DEFINITION)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    (project / "prefect.toml").write_text(f'[api]\nurl = "http://127.0.0.1:{port}/api"\n')
    server = _user_server(home, port)
    proc = None
    try:
        proc, out, task_id = _waiting_run(project)
        os.killpg(server.pid, signal.SIGKILL)
        server.wait()

        answered = _ergon(project, "tasks", "answer", task_id, "--set", "decision=approve")
        assert answered.returncode == 1, answered.stdout + answered.stderr
        assert "the answer is recorded, but the run was not resumed" in answered.stderr, answered.stderr

        server = _user_server(home, port)  # back within the run's patience (60 s)
        _exited_within(proc, 120)
        text = out.read_text()
        assert proc.returncode == 0 and "completed" in text and "Traceback" not in text, text
        assert _only_run(project)["status"] == "completed"
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
