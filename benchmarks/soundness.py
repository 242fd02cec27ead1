"""The differential soundness property at scale: many generated definition folders, counted.

Not a test. ``python benchmarks/soundness.py --definitions 10000`` (from the repository root,
with the project's virtualenv) draws that many folders from ``tests/runtime/definition_generator.py``
and puts each through ``tests/runtime/differential.py`` — ``ergon check``, then real runs on a
local Prefect server and a fresh store, on the offline model, with drawn inputs and human
answers — exactly as ``tests/runtime/test_generated_definitions.py`` does with its CI budget,
but collecting instead of stopping at the first problem. ``--seed`` picks another sequence of
folders (each seed is reproducible).

Prints the counts by generated kind, the refusals by diagnostic code, how the runs ended, the
precision of ``maybe-unset``/``no-fallback``, and every problem (a failure other than the
world's after a clean check) grouped by class — its message with names and numbers blanked —
with one folder of each class written under ``--keep`` to read and shrink. Exits 1 when a
problem was found.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "runtime"))

from benchmarks.home import prefect_for_benchmark  # noqa: E402

ANSWERER = "soundness-checker"


def problem_class(problem: str) -> str:
    """A problem's message with the names and numbers that vary between folders blanked."""
    text = re.sub(r"`[^`]*`", "`_`", problem)
    text = re.sub(r"'[^']*'", "'_'", text)
    text = re.sub(r"\b(gen_\w+|[fcg]\d+|n\d+|p\d+|arm\d+|in\d+)\b", "_", text)
    return re.sub(r"\d+(\.\d+)?", "N", text)[:220]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--definitions", type=int, default=10_000, help="how many folders to draw")
    parser.add_argument("--seed", type=int, default=0, help="which sequence of folders")
    parser.add_argument("--kinds", default="process,pipeline,workflow",
                        help="the main definitions' kinds, comma-separated (weighted as the test weighs them)")
    parser.add_argument("--keep", type=Path, default=Path("soundness-problems"),
                        help="where one folder per problem class is written")
    args = parser.parse_args()

    os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")
    os.environ.pop("ERGON_MODEL", None)
    os.environ["ERGON_CHAIN_MAX_DEPTH"] = "0"  # the property starts the chained definition itself
    prefect_for_benchmark()
    from hypothesis import HealthCheck, Phase, given, seed, settings
    from hypothesis import strategies as st

    from definition_generator import SHAPES, Generated, definitions
    from differential import Tally, differential, write
    from flows import people, tokens

    people.add_user(ANSWERER, admin=True)
    os.environ["ERGON_TOKEN"] = tokens.create(ANSWERER).token
    scratch = Path(os.environ["ERGON_HOME"]) / "generated"
    tally = Tally()
    classes: Counter = Counter()
    started = time.monotonic()

    kinds = set(args.kinds.split(","))
    shapes = tuple(shape for shape in SHAPES if shape in kinds)

    @seed(args.seed)
    @settings(max_examples=args.definitions, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(generated=definitions(shapes), data=st.data())
    def one_folder(generated: Generated, data: st.DataObject) -> None:
        outcome = differential(generated, data, scratch)
        tally.add(generated, outcome)
        for cls in sorted({problem_class(p) for p in outcome.problems}):
            if not classes[cls]:
                write(generated, args.keep / f"class-{len(classes) + 1}")
                (args.keep / f"class-{len(classes) + 1}" / "PROBLEM.txt").write_text("\n".join(outcome.problems) + "\n")
            classes[cls] += 1
        if tally.folders % 100 == 0:
            print(f"{tally.folders} folders, {tally.clean} clean, {len(tally.problems)} problems, "
                  f"{time.monotonic() - started:.0f} s", flush=True)

    one_folder()
    print(f"soundness: {args.definitions} folders, seed {args.seed}, {time.monotonic() - started:.0f} s")
    for line in tally.lines():
        print(line)
    for index, (cls, count) in enumerate(classes.most_common(), 1):
        print(f"  class {index}: {count} folder(s): {cls}")
    return 1 if tally.problems else 0


if __name__ == "__main__":
    sys.exit(main())
