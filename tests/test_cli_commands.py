"""The `ergon` command index: lazy commands, listed with their own help, importing only what they need.

Every command is registered by import path (``flows.cli.COMMANDS``) so that `ergon --help` and
`ergon check` do not import every command module. cyclopts shows the registered help in the list
and keeps it as the command's description once imported, so it must be the command's own text.
Each probe runs in a fresh interpreter: importing a command module changes what the next import
costs, and resolving a command rewrites its help.
"""

from __future__ import annotations

import subprocess
import sys

from fresh_python import ROOT, python_json

_OWN_HELP = """
import importlib, inspect, json
from flows.cli import COMMANDS
found = {}
for name, (target, _help) in COMMANDS.items():
    module, attribute = target.split(":")
    obj = getattr(importlib.import_module(module), attribute)
    if callable(obj) and not hasattr(obj, "help_flags"):  # a function: its docstring up to the parameters
        text = inspect.cleandoc(obj.__doc__ or "").split("\\n\\nParameters\\n")[0]
    else:  # a sub-App: the help it was made with
        text = obj.help
    found[name] = text
print(json.dumps(found))
"""

_MODULES_AFTER = """
import json, sys
from flows.cli import run
code = run(sys.argv[1:])
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def _paragraphs(text: str) -> list[str]:
    return [" ".join(p.split()) for p in text.strip().split("\n\n")]


def test_each_command_is_listed_with_its_own_help() -> None:
    from flows.cli import COMMANDS

    own = python_json(_OWN_HELP)
    assert set(own) == set(COMMANDS)
    for name, (_target, listed) in COMMANDS.items():
        assert _paragraphs(listed) == _paragraphs(own[name]), f"`{name}`: flows.cli.COMMANDS and the command disagree"


def test_help_lists_every_command_without_importing_any() -> None:
    from flows.cli import COMMANDS

    done = subprocess.run([sys.executable, "-m", "flows.cli", "--help"], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, env={"PATH": "/usr/bin:/bin", "COLUMNS": "200", "HOME": str(ROOT)})
    assert done.returncode == 0, done.stderr
    listed = {line.strip("│ ").split()[0] for line in done.stdout.splitlines() if line.startswith("│ ")}
    assert set(COMMANDS) <= listed
    modules = python_json(_MODULES_AFTER, "--help")["modules"]
    assert [m for m in modules if m.startswith("flows.cli.")] == []
    assert "compiler" not in modules


def test_check_imports_the_compiler_and_nothing_of_the_runtime() -> None:
    result = python_json(_MODULES_AFTER, "check", "definitions/kyc_check.yaml")
    assert result["code"] == 0
    modules = set(result["modules"])
    assert "compiler" in modules and "flows.cli.definitions" in modules
    for heavy in ("prefect", "sqlmodel", "sqlalchemy", "litellm", "streamlit", "flows.store", "flows.runtime",
                  "flows.cli.deploy", "flows.cli.runs", "flows.cli.submissions"):
        assert heavy not in modules, f"`ergon check` imported {heavy}"


_COLLECTOR_AFTER = """
import gc, json, sys
from flows import cli
entry = sys.argv[1]
sys.argv = ["ergon", *sys.argv[2:]]
if entry == "main":
    try:
        cli.main()
    except SystemExit as stop:
        code = stop.code
else:
    code = cli.run(sys.argv[1:])
print(json.dumps({"code": code, "enabled": gc.isenabled(), "frozen": gc.get_freeze_count()}))
"""


def test_the_ergon_process_freezes_what_the_compiler_import_made_and_collects_again() -> None:
    # The process entry freezes the start-up objects (no collection walks them again, nor the one
    # at exit) and turns the collector back on for the command's own work.
    after = python_json(_COLLECTOR_AFTER, "main", "check", "definitions/kyc_check.yaml")
    assert after["code"] == 0 and after["enabled"] is True
    assert after["frozen"] > 10_000  # the compiler's modules, classes and validators (about 70,000)


def test_a_command_run_in_process_pauses_the_collector_only() -> None:
    # A caller that lives on (tests, embedding code) must not have its uncollected garbage frozen.
    after = python_json(_COLLECTOR_AFTER, "run", "check", "definitions/kyc_check.yaml")
    assert after == {"code": 0, "enabled": True, "frozen": 0}
