"""`ergon run` shows a fan-out's items as they end (a live bar: items done of the total) on a
terminal, and nothing of it when its output is piped. The command runs as a real subprocess,
once on a pseudo-terminal of 80 columns, once with its output piped."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from cli_process import terminal_output

pytestmark = pytest.mark.prefect

ERGON = str(Path(sys.executable).parent / "ergon")
ITEMS = 40

FAN = f"""
format_version: 1
process: {{name}}
initial: fan
context:
  schema: {{{{type: object, properties: {{{{names: {{{{type: array}}}}}}}}}}}}
  initial: {{{{names: {[f"n{i}" for i in range(ITEMS)]}}}}}
nodes:
  fan:
    type: foreach
    foreach: names
    as: who
    max_concurrency: 2
    task_runs: {{task_runs}}
    node: {{{{type: tool, tool: mark, input: {{{{name: "{{{{{{{{ who }}}}}}}}", seconds: 0.05}}}}}}}}
    transitions: [{{{{to: done}}}}]
  done: {{{{type: final}}}}
"""


@pytest.mark.parametrize("task_runs", ["item", "node"])
def test_a_fanout_shows_its_items_on_a_terminal_and_nothing_when_piped(prefect_api, store, definitions, tmp_path,
                                                                        task_runs):
    name = f"bar_{task_runs}"
    (definitions / f"{name}.yaml").write_text(FAN.format(name=name, task_runs=task_runs))
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"} | {"TERM": "xterm-256color"}

    out, status, _ = terminal_output([ERGON, "run", name], cwd=tmp_path, env=env, columns=80)
    shown = out.decode("utf-8", "replace")
    assert status == 0, shown
    assert f"/{ITEMS}" in shown, "no count of items while the fan-out ran"
    counts = [int(n) for n in re.findall(rf"(\d+)/{ITEMS}\b", shown)]
    assert counts == sorted(counts) and counts[-1] == ITEMS, counts
    assert "fan" in shown and "completed" in shown

    piped = subprocess.run([ERGON, "run", name], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert piped.returncode == 0, piped.stdout + piped.stderr
    assert f"({ITEMS} items)" in piped.stdout, "the fan-out's start line is kept"
    assert f"/{ITEMS}" not in piped.stdout + piped.stderr, "a bar was drawn into a pipe"
    assert "\x1b[" not in piped.stdout, "terminal control codes in piped output"
