"""`ergon serve` beside workers: a definition `ergon deploy` gave a work pool keeps its schedules
on its deployment, for the pool's workers; serve serves only the definitions without one."""

from __future__ import annotations

import os
import signal
import subprocess

import pytest

from deploy_helpers import ERGON, ROOT, cli, wait_for

pytestmark = pytest.mark.prefect


def hourly(name: str) -> str:
    return f"""
format_version: 1
process: {name}
initial: go
context:
  schema: {{type: object, properties: {{times: {{type: integer}}}}}}
  initial: {{times: 1}}
triggers:
  - {{type: interval, every: 3600}}
nodes:
  go: {{type: tool, tool: increment, input: {{value: "{{{{ times }}}}"}}, writes: [times], transitions: [{{to: done}}]}}
  done: {{type: final}}
"""


def _deployment(name: str):
    from prefect.client.orchestration import get_client
    from prefect.exceptions import ObjectNotFound

    with get_client(sync_client=True) as client:
        try:
            return client.read_deployment_by_name(f"{name}/{name}")
        except ObjectNotFound:
            return None


def test_serve_leaves_a_definition_deployed_to_a_pool_on_its_pool(deploy_env, definitions, pool, tmp_path):
    (definitions / "pooled_hourly.yaml").write_text(hourly("pooled_hourly"))
    (definitions / "served_hourly.yaml").write_text(hourly("served_hourly"))
    done = cli(["deploy", "pooled_hourly", "--work-pool", pool, "--prefect-file", str(tmp_path / "prefect.yaml")],
               deploy_env)
    assert done.returncode == 0, done.stdout + done.stderr

    log = tmp_path / "serve.log"
    proc = subprocess.Popen(ERGON + ["serve", "--webhook-port", "0"], env=deploy_env, cwd=ROOT, stdout=log.open("w"),
                            stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_for("ergon serve to be ready", lambda: "ready — Ctrl-C" in log.read_text() or proc.poll() is not None,
                 timeout=120)
        assert proc.poll() is None, log.read_text()
        # serve registers the deployments it serves as it starts serving them, just after `ready`
        served = wait_for("serve's deployment of served_hourly", lambda: _deployment("served_hourly"), timeout=60)
        text = log.read_text()
        pooled = _deployment("pooled_hourly")
    finally:
        os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(45)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)

    assert f"schedule pooled_hourly:0 runs on work pool {pool} (deployment pooled_hourly/pooled_hourly" in text, text
    assert "not served here" in text
    assert "schedule served_hourly:0 every 3600s" in text, text
    assert served.work_pool_name is None, "serve's own deployment is served from its process, on no pool"
    assert pooled is not None and pooled.work_pool_name == pool, "serve took the deployed definition off its pool"
    assert [s.active for s in pooled.schedules] == [True], "its schedule stays on its deployment, active"
