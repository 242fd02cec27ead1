"""`ergon --version` prints the installed distribution's version, the one pyproject.toml gives it."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_version_is_the_distributions():
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    done = subprocess.run([str(Path(sys.executable).parent / "ergon"), "--version"], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == declared
    assert declared != "0.0.0"
