"""What one JavaScript evaluation costs: a fresh isolate per evaluation against a reused context.

``compiler.js.engine`` gives every evaluation (a Handlebars render, a JST template, a
``runJavascriptCode`` step) a new V8 isolate with the runtime bundle loaded, so nothing one does
reaches the next. This measures that choice against its alternative, one context kept and
reused (timed here with mini-racer directly, as the baseline), and the checker's analysis
calls, which do reuse their context (they only parse):

    .venv/bin/python benchmarks/js_sandbox.py [--repeat 50]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from py_mini_racer import MiniRacer

from compiler.js import engine

TEMPLATE = "Review the following items:\n{{#each items}}\n- {{this.title}}: {{this.description}}\n{{/each}}"
DATA = {"items": [{"title": f"item {i}", "description": "a thing"} for i in range(10)]}
RUNTIME = (Path(engine.__file__).with_name("vendor") / "runtime.js").read_text(encoding="utf-8")


def timed(fn, repeat: int) -> tuple[float, float]:
    """(best, median) milliseconds of ``repeat`` calls."""
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append((time.perf_counter() - started) * 1000)
    return min(times), statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=50)
    repeat = parser.parse_args().repeat

    started = time.perf_counter()
    engine.analyse("globalNames", "")
    start_ms = (time.perf_counter() - started) * 1000

    payload = {"op": "handlebars", "template": TEMPLATE, "data": DATA, "model": "m"}
    rows = [("fresh isolate per evaluation (Ergon)", timed(lambda: engine.run(payload), repeat))]

    def new_isolate() -> None:
        with MiniRacer() as mr:
            mr.eval("0")

    def new_isolate_with_bundle() -> None:
        with MiniRacer() as mr:
            mr.eval(RUNTIME)

    rows.append(("  of which: a new isolate (mini-racer, in this process)", timed(new_isolate, repeat)))
    rows.append(("  of which: + loading the runtime bundle", timed(new_isolate_with_bundle, repeat)))
    reused = MiniRacer()
    reused.eval(RUNTIME)
    script = f"__ergon_run({json.dumps(json.dumps(payload))})"
    reused.eval("var __keep = __ergon_run")  # the entry point removes itself when called

    def reuse() -> None:
        reused.eval(f"globalThis.__ergon_run = __keep; {script}")

    rows.append(("reused context, same render (baseline)", timed(reuse, repeat)))
    counter = iter(range(10**9))
    rows.append(("analysis call (reused context, uncached text)",
                 timed(lambda: engine.analyse("handlebars", f"{TEMPLATE} {next(counter)}"), repeat)))

    print(f"JavaScript sandbox: best [median] of {repeat}, milliseconds; worker start {start_ms:.0f} ms")
    for label, (best, median) in rows:
        print(f"{label:<58} {best:7.2f} [{median:7.2f}]")


if __name__ == "__main__":
    main()
