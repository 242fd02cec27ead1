"""The reliability harness in CI: 1,000 seeded mutations of every definition and golden fixture,
each a report of well-formed diagnostics — no traceback, no case over 5 s, peak memory under
500 MB. The cases run in a fresh interpreter (``benchmarks/fuzz.py``), so that its peak memory
is the cases' own, not that of the tests before them; its table of counts per mutation kind is
printed (``-s``, or the captured output of a failure)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CASES = int(os.environ.get("ERGON_FUZZ_CASES", "1000"))


def test_a_thousand_hostile_or_broken_definitions_each_get_diagnostics():
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "fuzz.py"), "--cases", str(CASES)],
                          capture_output=True, text=True, timeout=900, cwd=ROOT)
    print(done.stdout)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]
    lines = done.stdout.splitlines()
    total = next(line for line in lines if line.startswith("total")).split()
    assert total[1:] == [str(CASES), "0"], "every case ran and none failed"
    kinds = lines[lines.index(next(line for line in lines if line.startswith("kind"))) + 1:lines.index(
        next(line for line in lines if line.startswith("total")))]
    assert len(kinds) >= 15 and all(int(k.split()[1]) > 0 for k in kinds), "every mutation kind ran"
