"""A probe in a fresh interpreter: what importing or freezing does is seen without what this test
process has already imported or frozen. The probe prints one JSON object as its last line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def python_json(code: str, *args: str, timeout: float = 120) -> dict:
    """Run ``python -c CODE ARGS`` from the project folder; the JSON of its last line of output."""
    done = subprocess.run([sys.executable, "-c", code, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])
