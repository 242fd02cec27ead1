"""Time of `ergon test` over N cases of the shipped definitions' tests, as a user runs it.

The test files of ``definitions/tests/`` are copied into a temporary folder as many times as it
takes to hold at least ``--cases`` cases; each round starts one fresh ``python -m flows.cli test``
process over that folder (its own temporary store, the offline model, no Prefect server) and
reads the whole process's wall time and the in-process time ``--json`` reports. Medians over
the rounds are printed.

    python benchmarks/usertests.py [--cases 50] [--rounds 3]

Aim: 50 cases in under 10 s.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    sources = sorted((ROOT / "definitions" / "tests").glob("*.test.yaml"))
    with tempfile.TemporaryDirectory(prefix="ergon-usertests-") as folder:
        copies = 0
        total = 0
        while total < args.cases:
            copies += 1
            for source in sources:
                shutil.copy(source, Path(folder) / f"{source.stem.removesuffix('.test')}_{copies}.test.yaml")
            total = _count(Path(folder))
        walls, inside = [], []
        for _ in range(args.rounds):
            started = time.perf_counter()
            done = subprocess.run([sys.executable, "-m", "flows.cli", "test", folder, "--json"], cwd=ROOT,
                                  capture_output=True, text=True)
            walls.append(time.perf_counter() - started)
            report = json.loads(done.stdout)
            inside.append(report["seconds"])
            assert report["failed"] == 0 and not report["problems"], done.stdout[:2000]
    print(f"{total} cases ({copies} copies of {len(sources)} test files), {args.rounds} rounds")
    print(f"  process wall time: median {statistics.median(walls):.2f} s")
    print(f"  in-process (load, check, run all cases): median {statistics.median(inside):.2f} s")
    print(f"  per case: {statistics.median(inside) / total * 1000:.0f} ms")


def _count(folder: Path) -> int:
    from flows.testing.spec import collect_files, load_test_file

    return sum(len(t.spec.cases) for t in map(load_test_file, collect_files([folder])) if t.spec is not None)


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
