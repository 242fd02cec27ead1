"""Ergon installed from its wheel, used in a data engineer's own folder — never the checkout.

Every command runs with the installed virtualenv's ``ergon``/``python`` (:mod:`installed`) and
its cwd in a temporary project folder made by ``ergon init``, against the test session's store
and Prefect server (the first steps with nothing configured are :mod:`test_first_steps`).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "deploy"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from deploy_helpers import Worker, flow_run, start_deployment, wait_for  # noqa: E402
from installed import ROOT, last_json, run_in  # noqa: E402

pytestmark = pytest.mark.prefect


SLOW_TOOL = '''
"""A tool that blocks until the test releases it (the run is killed while it waits)."""
import time
from pathlib import Path

from flows.tools import tool


@tool
def wait_for_release(release: str) -> dict:
    """Return once the file `release` exists."""
    while not Path(release).exists():
        time.sleep(0.05)
    return {"released": "yes"}
'''

SLOW_JOB = """
format_version: 1
kind: process
process: slow_job
initial: hello
context:
  schema:
    type: object
    properties:
      release: {type: string}
      greeting: {type: string}
      released: {type: string}
    required: [release]
nodes:
  hello:
    type: tool
    tool: greet
    input: {name: slow}
    writes: [greeting]
    transitions: [{to: wait}]
  wait:
    type: tool
    tool: wait_for_release
    input: {release: "{{ release }}"}
    writes: [released]
    transitions: [{to: done}]
  done: {type: final}
"""


@pytest.fixture
def project(tmp_path) -> Path:
    folder = tmp_path / "my-repo"
    folder.mkdir()
    return folder


@pytest.fixture
def env(prefect_api, store, tmp_path) -> dict[str, str]:
    """This test's store and ERGON_HOME, the session's Prefect server; nothing of the checkout."""
    clean = {k: v for k, v in os.environ.items()
             if k not in ("PYTHONPATH", "ERGON_DEFINITIONS", "VIRTUAL_ENV", "PYTHONHOME")}
    return {**clean, "ERGON_DATABASE_URL": store, "ERGON_HOME": str(tmp_path / "home"), "COLUMNS": "200"}


def test_the_venv_imports_the_installed_wheel_not_the_checkout(venv, project, env):
    probe = ("import json, flows, compiler, ui, prefect; from flows.cli import ui as cli_ui; "
             "print(json.dumps({'flows': flows.__file__, 'compiler': compiler.__file__, 'ui': ui.__file__, "
             "'app': str(cli_ui.APP), 'config': str(cli_ui.CONFIG), 'cmd': cli_ui.streamlit_command(1)}))")
    done = subprocess.run([str(venv / "bin" / "python"), "-c", probe], cwd=project, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    where = json.loads(done.stdout)
    for key in ("flows", "compiler", "ui", "app", "config"):
        path = Path(where[key]).resolve()
        assert path.is_relative_to(venv.resolve()), f"{key} comes from {path}, not the new virtualenv"
        assert not path.is_relative_to(ROOT), f"{key} comes from the checkout"
        assert path.exists()
    assert "--server.headless=true" in where["cmd"] and "--browser.gatherUsageStats=false" in where["cmd"], \
        "the packaged Streamlit settings become flags"


def test_the_wheel_ships_the_javascript_bundles_and_renders_handlebars_and_jst(venv, project, env):
    probe = (
        "import json; from pathlib import Path; import compiler.js.engine as engine\n"
        "from compiler.ir import PromptSegment; from compiler.prompts import render\n"
        "vendor = Path(engine.__file__).with_name('vendor')\n"
        "hbs = render(PromptSegment(role='user', content_type='handlebars', template='{{#each xs}}{{this}} {{/each}}& {{_model}}'),"
        " {'xs': [1, 2]}, model='m')\n"
        "jst = render(PromptSegment(role='user', content_type='jst', template='`${xs.length} ${_.stringify(xs)}`'), {'xs': [1, 2]}, model='m')\n"
        "print(json.dumps({'vendor': str(vendor), 'files': sorted(p.name for p in vendor.iterdir()), 'hbs': hbs, 'jst': jst}))\n"
    )
    done = subprocess.run([str(venv / "bin" / "python"), "-c", probe], cwd=project, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert Path(found["vendor"]).resolve().is_relative_to(venv.resolve())
    assert {"analysis.js", "runtime.js", "README.md", "LICENSES"} <= set(found["files"])
    assert (Path(found["vendor"]) / "LICENSES" / "handlebars-4.7.10.LICENSE").is_file()
    assert found["hbs"] == "1 2 & m" and found["jst"] == "2 [1,2]"


def test_init_check_and_run_in_a_new_folder(venv, project, env):
    bad = project / "a-file"
    bad.write_text("")
    refused = run_in(venv, project, env, "init", str(bad))
    assert refused.returncode == 1 and "is not a folder" in refused.stderr and "Traceback" not in refused.stderr

    done = run_in(venv, project, env, "init")
    assert done.returncode == 0, done.stdout + done.stderr
    for rel in ("definitions/hello_process.yaml", "definitions/hello_pipeline.yaml", "definitions/hello_template.yaml",
                "definitions/hello_workflow.yaml", "definitions/interactions/write_tagline.yaml",
                "definitions/tools/greetings.py", "prefect.yaml", "README-ergon.md"):
        assert (project / rel).is_file(), rel
    assert "deployments: []" in (project / "prefect.yaml").read_text()

    (project / "definitions" / "hello_process.yaml").write_text("# mine\n")
    again = run_in(venv, project, env, "init")
    assert again.returncode == 1 and "definitions/hello_process.yaml" in again.stderr and "--force" in again.stderr
    assert "Traceback" not in again.stderr
    assert (project / "definitions" / "hello_process.yaml").read_text() == "# mine\n", "nothing overwritten"
    forced = run_in(venv, project, env, "init", "--force")
    assert forced.returncode == 0, forced.stderr
    assert "process: hello_process" in (project / "definitions" / "hello_process.yaml").read_text()

    checked = run_in(venv, project, env, "check")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "0 error(s)" in checked.stdout

    ran = run_in(venv, project, env, "run", "hello_process", "--input", "name=Ada", "--input", "excited=true", "--json")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    result = last_json(ran)
    assert result["status"] == "completed"
    assert result["context"]["greeting"] == "Hello, Ada!" and result["context"]["mood"] == "excited", \
        "the project's own tool ran"


def test_a_run_started_by_path_resumes_with_its_folders_tools_from_another_folder(venv, project, env, tmp_path):
    from flows.store import runs as run_store
    from flows.store import visits as visit_store

    assert run_in(venv, project, env, "init").returncode == 0
    jobs = project / "jobs"
    (jobs / "tools").mkdir(parents=True)
    (jobs / "tools" / "slow.py").write_text(SLOW_TOOL)
    (jobs / "slow_job.yaml").write_text(SLOW_JOB)
    release = tmp_path / "release"
    proc = subprocess.Popen([str(venv / "bin" / "ergon"), "run", "jobs/slow_job.yaml", "--input", f"release={release}"],
                            cwd=project, env={**env, "PWD": str(project)}, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        def waiting() -> str | None:
            rows, _ = run_store.list_runs(definition="slow_job")
            if rows and any(v.node_id == "wait" and v.status == "running" for v in visit_store.visits_for_run(rows[0].id)):
                return rows[0].id
            return None

        run_id = wait_for("the slow tool to be running", waiting, timeout=180,
                          diagnose=lambda: proc.stdout.read() if proc.poll() is not None else "still running")
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
    run = run_store.get_run(run_id)
    assert run.status == "running", "killed mid-run"
    assert run.catalog_sources and str(jobs.resolve() / "slow_job.yaml") in run.catalog_sources, \
        "the run remembers the file it was started from"

    release.write_text("go")
    elsewhere = tmp_path / "elsewhere"  # no definitions/ here: only the recorded folders can supply the tool
    elsewhere.mkdir()
    resumed = run_in(venv, elsewhere, env, "runs", "resume", run_id, "--json")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    result = last_json(resumed)
    assert result["status"] == "completed" and result["context"]["released"] == "yes", \
        "the tool of the run's own folder ran on resume"
    visits = visit_store.visits_for_run(run_id)
    assert [v.status for v in visits if v.node_id == "hello"] == ["completed"], "the completed visit was not repeated"
    assert [v.status for v in visits if v.node_id == "wait"][-1] == "completed"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_ergon_ui_serves_the_packaged_dashboard_from_the_project(venv, project, env, tmp_path):
    port = _free_port()
    log = tmp_path / "ui.log"
    with open(log, "wb") as fh:
        proc = subprocess.Popen([str(venv / "bin" / "ergon"), "ui", "--port", str(port)], cwd=project,
                                env={**env, "PWD": str(project)}, stdout=fh, stderr=subprocess.STDOUT,
                                start_new_session=True)
    try:
        def healthy() -> bool:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2) as response:
                    return response.status == 200
            except OSError:
                return False

        wait_for("the dashboard to answer", healthy, timeout=120, diagnose=lambda: log.read_text(errors="replace"))
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as response:
            assert response.status == 200
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


def test_deploy_from_the_project_and_a_process_worker_runs_it(venv, project, env, tmp_path):
    import uuid

    from prefect.client.orchestration import get_client

    from flows.store import runs as run_store

    pool = f"ergon-pkg-{uuid.uuid4().hex[:8]}"
    assert run_in(venv, project, env, "init").returncode == 0
    deployed = run_in(venv, project, env, "deploy", "hello_process", "--work-pool", pool, timeout=600)
    assert deployed.returncode == 0, deployed.stdout + deployed.stderr
    with get_client(sync_client=True) as client:
        deployment = client.read_deployment_by_name("hello_process/hello_process")
    assert deployment.entrypoint == "flows.prefect.deployments.flow_hello_process", "a module path, not a checkout file"
    assert deployment.work_pool_name == pool

    # started elsewhere, as systemd would start it: the deployment carries the project's folder
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    worker_env = {**env, "PWD": str(elsewhere), "PATH": f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"}
    worker = Worker(pool, worker_env, tmp_path / "worker.log", python=str(venv / "bin" / "python"), cwd=elsewhere).start()
    try:
        flow_run_id = start_deployment("hello_process/hello_process", {"name": "Grace"}).id
        final = wait_for("the deployment's flow run to end",
                         lambda: (fr := flow_run(flow_run_id)).state and fr.state.is_final() and fr,
                         timeout=240, diagnose=worker.tail)
        assert final.state.is_completed(), f"{final.state}\n{worker.tail()}"
        run = wait_for("the Ergon run of the flow run", lambda: run_store.get_run_by_prefect_id(str(flow_run_id)))
    finally:
        worker.stop()
    assert run.status == "completed" and run.trigger == "api"
    assert run.context["greeting"] == "Hello, Grace.", "the project's tool ran in the worker's flow run"
    assert run.catalog_sources == [str((project / "definitions").resolve())], \
        "the flow run compiled the definitions of the folder the deployment was made in, not the worker's"
