"""The check cache (:mod:`flows.cli.check_cache`): `ergon check` of unchanged input prints the stored
result without importing the compiler, and any change of what the check reads is a miss that prints
the new result.

Every case runs the installed ``ergon`` command in a project made by `ergon init`, with
``PYTHONPROFILEIMPORTTIME=1``: a check that imported ``compiler`` ran; one that did not printed a
stored result (a hit).
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest
from cli_process import ROOT, terminal_output

ERGON = ROOT / ".venv" / "bin" / "ergon"
PROCESS = "definitions/hello_process.yaml"

MCP_SERVERS = "servers:\n  - {type: mcp, id: notes, command: python3, args: [notes_server.py]}\n"
MCP_FLOW = """format_version: 1
process: mcp_flow
initial: add
context:
  schema: {type: object, properties: {total: {type: object}}}
  initial: {}
nodes:
  add:
    type: tool
    tool: notes_add
    input: {a: 2, b: 3}
    output: total
    writes: [total]
    transitions: [{to: done}]
  done:
    type: final
"""


def _lock(tool: str) -> str:
    schema = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}
    return json.dumps({"version": 1, "servers": {"notes": {"tools": [{"name": tool, "input_schema": schema}]}}})


def _env(**extra: str) -> dict[str, str]:
    """This environment without what turns the cache off or moves it, or changes colour and width."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("ERGON_") and k not in ("COLUMNS", "LINES", "NO_COLOR", "FORCE_COLOR", "TERM")}
    return {**env, "PYTHONPROFILEIMPORTTIME": "1", **extra}


class Done:
    """One `ergon check`: its exit status, output, and whether it ran the checker (imported the compiler)."""

    def __init__(self, proc: subprocess.CompletedProcess[str]) -> None:
        lines = proc.stderr.splitlines(keepends=True)
        modules = {line.rsplit("|", 1)[1].strip() for line in lines if line.startswith("import time:")}
        self.status = proc.returncode
        self.stdout = proc.stdout
        self.stderr = "".join(line for line in lines if not line.startswith("import time:"))
        self.checked = "compiler" in modules

    @property
    def result(self) -> tuple[int, str, str]:
        return self.status, self.stdout, self.stderr


def check(project: Path, *args: str, **env: str) -> Done:
    proc = subprocess.run([str(ERGON), "check", *args], cwd=project, env=_env(**env), stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=120)
    assert "Traceback" not in proc.stderr, proc.stderr
    return Done(proc)


def entries(project: Path) -> list[Path]:
    folder = project / ".ergon" / "cache" / "check"
    return sorted(folder.glob("*.json")) if folder.is_dir() else []


@pytest.fixture
def project(tmp_path: Path) -> Path:
    done = subprocess.run([str(ERGON), "init", str(tmp_path / "p")], env=_env(), capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return tmp_path / "p"


def miss_then_hit(project: Path, *args: str, **env: str) -> Done:
    """Check twice: the first runs the checker, the second prints the same result from the cache."""
    first = check(project, *args, **env)
    assert first.checked
    second = check(project, *args, **env)
    assert not second.checked, "the second check of unchanged input imported the compiler"
    assert second.result == first.result
    return first


@pytest.mark.parametrize("args", [(), (PROCESS,), ("--json", PROCESS)], ids=["folder", "file", "json"])
def test_a_second_check_of_unchanged_input_is_printed_from_the_cache(project: Path, args: tuple[str, ...]) -> None:
    first = miss_then_hit(project, *args)
    assert first.status == 0
    if "--json" in args:
        assert json.loads(first.stdout) == []
    else:
        assert first.stdout.endswith("0 error(s)\n")
    assert len(entries(project)) == 1


def test_a_failed_check_is_replayed_with_its_status_and_both_streams(project: Path) -> None:
    path = project / PROCESS
    path.write_text(path.read_text().replace("tool: greet", "tool: greet_nobody"))
    first = miss_then_hit(project, PROCESS)
    assert first.status == 1
    assert "error[unknown-tool]" in first.stdout and "1 error(s)" in first.stderr


def test_a_definition_made_invalid_fails_the_next_check(project: Path) -> None:
    assert miss_then_hit(project, PROCESS).status == 0
    path = project / PROCESS
    path.write_text(path.read_text().replace("to: relax", "to: nowhere"))
    done = check(project, PROCESS)
    assert done.checked and done.status == 1
    assert "error[unknown-target]" in done.stdout and "`nowhere`" in done.stdout and "2 error(s)" in done.stderr


def test_an_edit_of_the_same_size_and_mtime_is_seen_by_its_content(project: Path) -> None:
    """A save within the file system's mtime granularity keeps size and mtime: the content decides."""
    path = project / PROCESS
    before = path.stat()
    assert miss_then_hit(project, PROCESS).status == 0
    path.write_text(path.read_text().replace("to: relax}", "to: relux}"))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_size == before.st_size
    done = check(project, PROCESS)
    assert done.checked and done.status == 1 and "relux" in done.stdout


def test_a_new_definition_file_is_a_miss(project: Path) -> None:
    first = miss_then_hit(project)
    count = int(first.stdout.split()[0])
    (project / "definitions" / "copy.yaml").write_text((project / PROCESS).read_text().replace(
        "process: hello_process", "process: hello_copy"))
    done = check(project)
    assert done.checked and done.status == 0
    assert done.stdout == f"{count + 1} definition(s) checked, 0 error(s)\n"


def test_a_changed_tool_signature_fails_the_definition_that_calls_it(project: Path) -> None:
    assert miss_then_hit(project, PROCESS).status == 0
    tools = project / "definitions" / "tools" / "greetings.py"
    tools.write_text(tools.read_text().replace("def greet(name: str", "def greet(person: str"))
    done = check(project, PROCESS)
    assert done.checked and done.status == 1
    assert "error[tool-params]" in done.stdout and "`person`" in done.stdout


def test_the_mcp_lock_is_read_again_when_it_changes_or_is_touched(project: Path) -> None:
    tools = project / "definitions" / "tools"
    (tools / "servers.yaml").write_text(MCP_SERVERS)
    (tools / "servers.lock.json").write_text(_lock("add"))
    (project / "definitions" / "mcp_flow.yaml").write_text(MCP_FLOW)
    assert miss_then_hit(project, "definitions/mcp_flow.yaml").status == 0

    lock = tools / "servers.lock.json"
    os.utime(lock, ns=(time.time_ns(), lock.stat().st_mtime_ns + 1_000_000_000))  # touched, same content
    touched = check(project, "definitions/mcp_flow.yaml")
    assert touched.checked and touched.status == 0

    lock.write_text(_lock("sum"))  # the server's tool is now `sum`: `notes_add` is unknown
    done = check(project, "definitions/mcp_flow.yaml")
    assert done.checked and done.status == 1 and "no tool is named `notes_add`" in done.stdout


def test_an_ergon_variable_and_other_arguments_are_misses(project: Path) -> None:
    plain = miss_then_hit(project, PROCESS)
    with_variable = check(project, PROCESS, ERGON_SOMETHING="1")
    assert with_variable.checked and with_variable.result == plain.result
    as_json = check(project, "--json", PROCESS)
    assert as_json.checked and json.loads(as_json.stdout) == []
    folder = check(project)
    assert folder.checked and folder.stdout != plain.stdout
    assert len(entries(project)) == 4


def test_a_corrupted_entry_is_ignored_and_replaced(project: Path) -> None:
    first = miss_then_hit(project, PROCESS)
    [entry] = entries(project)
    for damage in (b"", b"{\"format\": 1, \"key\"", b"\xff\xfe not json", json.dumps(
            {"format": 1, "key": entry.stem, "status": 0, "output": [["out", 5]]}).encode()):
        entry.write_bytes(damage)
        done = check(project, PROCESS)
        assert done.checked and done.result == first.result
        assert json.loads(entry.read_text())["status"] == 0  # stored again, whole


def test_no_cache_and_its_variable_check_afresh_and_store_nothing(project: Path) -> None:
    first = check(project, "--no-cache", PROCESS)
    assert first.checked and first.status == 0 and entries(project) == []
    assert check(project, PROCESS, ERGON_NO_CHECK_CACHE="1").checked and entries(project) == []
    miss_then_hit(project, PROCESS)
    # a stored result says something else: the cache prints it, --no-cache does not
    [entry] = entries(project)
    data = json.loads(entry.read_text())
    data["output"] = [["out", "stored\n"]]
    entry.write_text(json.dumps(data))
    assert check(project, PROCESS).stdout == "stored\n"
    for done in (check(project, "--no-cache", PROCESS), check(project, PROCESS, ERGON_NO_CHECK_CACHE="1")):
        assert done.checked and done.result == first.result


def test_the_cache_keeps_the_most_recently_used_entries(project: Path) -> None:
    folder = project / ".ergon" / "cache" / "check"
    folder.mkdir(parents=True)
    for i in range(70):
        old = folder / f"{i:064x}.json"
        old.write_text("{}")
        os.utime(old, (1_000_000 + i, 1_000_000 + i))
    check(project, PROCESS)
    kept = entries(project)
    assert len(kept) == 64
    assert folder / f"{0:064x}.json" not in kept and folder / f"{69:064x}.json" in kept


def test_outside_a_project_nothing_is_stored(tmp_path: Path, project: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for _ in range(2):
        done = check(elsewhere, str(project / PROCESS))
        assert done.checked and done.status == 0
    assert not (elsewhere / ".ergon").exists()
    miss_then_hit(project, str(project / PROCESS))  # in the project's root, the same check is stored


def test_ergon_home_holds_the_cache_when_set(tmp_path: Path, project: Path) -> None:
    home = tmp_path / "state"
    miss_then_hit(project, PROCESS, ERGON_HOME=str(home))
    assert len(list((home / "cache" / "check").glob("*.json"))) == 1 and entries(project) == []


def _in_a_terminal(project: Path, *args: str) -> tuple[bytes, int, bool]:
    """What `ergon check ARGS` writes to a pseudo-terminal 100 columns wide (standard output and
    error both), its exit status, and whether it ran the checker (its import times, written to the
    terminal too, are taken out of the bytes)."""
    out, status, _ = terminal_output([str(ERGON), "check", *args], cwd=project, env=_env(TERM="xterm"), columns=100)
    lines = out.splitlines(keepends=True)
    imports = [line for line in lines if line.startswith(b"import time:")]
    checked = any(line.rstrip().endswith(b"| compiler") for line in imports)
    return b"".join(line for line in lines if not line.startswith(b"import time:")), status, checked


def test_a_terminals_colours_are_replayed_to_a_terminal_and_not_to_a_pipe(project: Path) -> None:
    path = project / PROCESS
    path.write_text(path.read_text().replace("tool: greet", "tool: greet_nobody"))
    first, status, checked = _in_a_terminal(project, PROCESS)
    assert checked and status == 1 and b"\x1b[31m1 definition(s) checked, 1 error(s)\x1b[0m" in first
    second, status, checked = _in_a_terminal(project, PROCESS)
    assert not checked and (second, status) == (first, 1)
    piped = check(project, PROCESS)
    assert piped.checked and piped.status == 1 and "\x1b[" not in piped.stdout + piped.stderr
    assert "1 error(s)" in piped.stderr
