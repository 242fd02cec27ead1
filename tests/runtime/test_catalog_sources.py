"""A run started from a file outside the definitions folder records where its catalog came from,
and the dashboard's replay (a detached `ergon run NAME --run-id`) compiles against the same
folder and tools — not the default definitions folder, which knows nothing of it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.prefect

JOB = """
format_version: 1
kind: process
process: outside_job
initial: stamp
context:
  schema:
    type: object
    properties:
      who: {type: string}
      stamped: {type: string}
    required: [who]
nodes:
  stamp:
    type: tool
    tool: outside_stamp
    input: {who: "{{ who }}"}
    writes: [stamped]
    transitions: [{to: done}]
  done: {type: final}
"""

TOOL = '''
from flows.tools import tool


@tool
def outside_stamp(who: str) -> dict:
    """Stamp a name."""
    return {"stamped": f"stamped {who}"}
'''


def test_replay_of_a_run_started_by_path_uses_its_folder(prefect_api, store, definitions, tmp_path):
    from flows.store import runs as run_store
    from flows.runs import replay

    folder = tmp_path / "elsewhere"
    (folder / "tools").mkdir(parents=True)
    (folder / "tools" / "outside.py").write_text(TOOL)
    (folder / "outside_job.yaml").write_text(JOB)
    env = {**os.environ, "COLUMNS": "200"}  # the `store` and `definitions` fixtures set this test's store and folder
    done = subprocess.run([sys.executable, "-m", "flows.cli", "run", str(folder / "outside_job.yaml"),
                           "--input", "who=ada", "--json"], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    first = run_store.get_run(json.loads(done.stdout.strip().splitlines()[-1])["run_id"])
    assert first.context["stamped"] == "stamped ada"
    assert set(first.catalog_sources) >= {str(definitions.resolve()), str((folder / "outside_job.yaml").resolve()),
                                          str(folder.resolve())}

    replay_id = replay(first, "alice").run_id
    deadline = time.monotonic() + 240
    while (again := run_store.get_run(replay_id)).status in ("pending", "running") and time.monotonic() < deadline:
        time.sleep(0.3)
    assert again.status == "completed", again.error
    assert again.trigger == "replay" and again.context["stamped"] == "stamped ada"
    assert again.catalog_sources == first.catalog_sources
