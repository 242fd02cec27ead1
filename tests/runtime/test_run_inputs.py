"""Bad run inputs from the command line: each is a diagnostic naming the problem, printed in
bounded size, before anything is recorded — never a traceback, never the input echoed back."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

ERGON = [sys.executable, "-m", "flows.cli"]

NEEDS = """
format_version: 1
process: needs
initial: start
context:
  schema:
    type: object
    properties:
      note: {type: string}
      n: {type: integer}
nodes:
  start: {type: tool, tool: noop, transitions: [{to: done}]}
  done: {type: final}
"""


@pytest.fixture
def env(store, definitions):
    (definitions / "needs.yaml").write_text(NEEDS)
    return {**os.environ, "ERGON_DATABASE_URL": store, "ERGON_DEFINITIONS": str(definitions), "COLUMNS": "200"}


def _refused(args: list[str], env: dict) -> str:
    from flows.store import runs as run_store

    out = subprocess.run([*ERGON, "run", "needs", *args], env=env, capture_output=True, text=True, timeout=120)
    text = out.stdout + out.stderr
    assert out.returncode == 2, text[:2000]
    assert "Traceback" not in text
    assert len(text) < 4000, f"{len(text):,} characters printed: the input was echoed back"
    assert run_store.list_runs(definition="needs")[1] == 0, "a refused start recorded a run"
    return text


def test_a_binary_input_file_is_refused(env, tmp_path):
    (tmp_path / "in.bin").write_bytes(bytes(range(256)) * 4)
    assert "cannot read" in _refused(["--input-file", str(tmp_path / "in.bin")], env)


def test_an_alias_bomb_input_file_is_refused_at_the_expansion_limit(env, tmp_path):
    bomb = 'a0: &a0 ["x","x","x","x","x","x","x","x","x","x"]\n' + "".join(
        f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 10) + "]\n" for i in range(1, 10))
    (tmp_path / "bomb.yaml").write_text(bomb)
    assert "expands to more than" in _refused(["--input-file", str(tmp_path / "bomb.yaml")], env)


def test_a_20_mb_input_file_is_refused_unread(env, tmp_path):
    (tmp_path / "big.json").write_text('{"note": "' + "x" * (20 * 1024 * 1024) + '"}')
    assert "larger than" in _refused(["--input-file", str(tmp_path / "big.json")], env)


def test_inputs_larger_than_the_context_cap_are_refused_before_the_run_is_recorded(env):
    text = _refused(["--input", "note=" + "y" * 100_000], env)
    assert "64 KB" in text or "65,536" in text


def test_a_number_too_long_to_read_is_refused(env):
    text = _refused(["--input", "n=" + "9" * 100_000], env)
    assert "digits" in text


def test_a_schema_error_does_not_echo_a_long_value(env):
    _refused(["--input", "n=" + '"' + "z" * 30_000 + '"'], env)  # a string where an integer is declared


def test_sigterm_stops_a_waiting_run_without_a_traceback(env, prefect_api, definitions):
    import signal
    import time

    (definitions / "waits.yaml").write_text(NEEDS.replace("process: needs", "process: waits").replace(
        "{type: tool, tool: noop,", "{type: tool, tool: sleep, input: {seconds: 60},"))
    proc = subprocess.Popen([*ERGON, "run", "waits"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    from flows.store import runs as run_store

    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and not any(r.status == "running" for r in run_store.list_runs(definition="waits")[0]):
        time.sleep(0.3)
    time.sleep(1.0)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert "Traceback" not in out + err, err[-3000:]
    assert proc.returncode != 0
    [run] = run_store.list_runs(definition="waits")[0]
    assert run.status in ("cancelled", "failed", "crashed"), run.status
