"""`ergon` started with its standard output or error closed (`ergon check FILE >&-`, a service
manager's unit without them) runs the command and exits with its status, never a traceback."""

from __future__ import annotations

import subprocess
import sys

import pytest
from cli_process import ROOT, clean_env

CLOSE_STDOUT = "import os, subprocess, sys; os.close(1); sys.exit(subprocess.call(sys.argv[1:]))"


@pytest.mark.parametrize("args, status", [
    (["check", "definitions/kyc_check.yaml"], 0),
    (["check", "definitions/no_such_file.yaml"], 2),
    (["--version"], 0),
])
def test_a_closed_standard_output_is_no_crash(args, status):
    ergon = [sys.executable, "-m", "flows.cli", *args]
    done = subprocess.run([sys.executable, "-c", CLOSE_STDOUT, *ergon], cwd=ROOT, env=clean_env(),
                          capture_output=True, text=True, timeout=120)
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == status, done.stderr
