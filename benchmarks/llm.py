"""LLM benchmark: a foreach of interaction calls vs. what a Prefect user would write.

Both sides talk to the same local OpenAI-compatible server (the test suite's fake, answering
each request after 50 ms) in one process:

* **Ergon** — a process whose `foreach` runs an `interaction` node per item,
  ``max_concurrency: 20``: each item is a Prefect task run, an LLM call recorded in the store,
  structured output validated, the result collected. Measured four times: with the interaction
  naming a **model** (``openai/bench``, reached through ``OPENAI_API_BASE``: one
  ``litellm.acompletion`` per item, the same call as the baseline's), naming an
  **environment** of one model and a **failover environment** of two models (both called
  directly, with the entry's endpoint, key and the environment's retries and timeout), and,
  for reference, a **balanced environment** of two entries (litellm's ``Router``, which
  costs 2–5 ms of CPU per call).
* **Prefect baseline** — what a Prefect user writes by hand: a flow with one ``@task`` per
  ``litellm.acompletion`` call (no cache, no result persistence), the same window held by an
  ``asyncio.Semaphore``. Each task run is a Prefect task run, as Ergon's items are. Aim: Ergon
  ≤ 1.1× this, naming a model and naming an environment.
* **bare asyncio** — ``asyncio.gather`` of the same ``litellm.acompletion`` calls behind an
  ``asyncio.Semaphore``: no orchestration at all, the floor.
* **task_runs node** — the model variant's foreach with ``task_runs: node``: one Prefect task run
  for the node, its items on the event loop, each still a visit in the store with its LLM call
  recorded. Aim: ≤ 1.3× bare asyncio (200 calls, window 20, 50 ms; 10,000 calls, window 100,
  20 ms, with peak RSS ≤ 400 MB).

The sides alternate in one process, each run on an idle Prefect server
(``benchmarks/settle.py``); the figures are medians, with the ratio of each side's fastest run
beside them (noise on a shared machine only adds time), and the median of each round's own ratio
with its bootstrap interval (``benchmarks/paired.py``). Usage:
``python benchmarks/llm.py [--items 200] [--window 20] [--latency 0.05] [--repeat 5] [--sides a,b]
[--freeze]``; ``--sides asyncio,"task_runs node" --items 10000 --window 100 --latency 0.02 --freeze``
is the large fan-out's row. Above 1,000 items the foreach does not collect (the 64 KB context
would refuse 10,000 labels); each label stays in its item's visit.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "llm"))

from benchmarks.home import prefect_for_benchmark  # noqa: E402
from benchmarks.paired import paired_ratio  # noqa: E402
from benchmarks.settle import settle_heap, wait_until_idle  # noqa: E402

ITEMS = 200
WINDOW = 20
LATENCY = 0.05

PROCESS = """
format_version: 1
process: {name}
initial: each
context:
  schema:
    type: object
    properties:
      topics: {{type: array}}
      labels: {{type: array}}
      label: {{type: string}}
    required: [topics]
nodes:
  each:
    type: foreach
    foreach: topics
    as: topic
    max_concurrency: {window}
    task_runs: {task_runs}
    node:
      type: interaction
      interaction: {interaction}
      input: {{topic: "topic {{{{ topic }}}}"}}
{gathered}
    transitions: [{{to: done}}]
  done: {{type: final}}
"""

INTERACTION = """
kind: interaction
name: {name}
{target}
prompts:
  - {{role: user, template: "Label {{{{ topic }}}}."}}
input_schema: {{type: object, properties: {{topic: {{type: string}}}}, required: [topic]}}
"""

#: (process, interaction, how the interaction names its model, the model name the server sees)
VARIANTS = {
    "model": ("bench_llm_model", "Label", "model: openai/bench-direct", "bench-direct"),
    "environment": ("bench_llm_env", "LabelEnv", "environment: bench", "bench"),
    "failover env": ("bench_llm_failover", "LabelFailover", "environment: bench_failover", "bench-first"),
    "balanced env": ("bench_llm_balanced", "LabelBalanced", "environment: bench_balanced", "bench-balanced"),
    "task_runs node": ("bench_llm_node", "LabelNode", "model: openai/bench-node", "bench-node"),
}
#: the variants whose foreach is one Prefect task run (`task_runs: node`): aim against bare asyncio
ONE_TASK_RUN = {"task_runs node"}
#: A foreach collects its labels into the context up to this many items; above, the 64 KB
#: context would refuse them, so each label stays in its item's visit record (as it does anyway).
COLLECT_UP_TO = 1000

ENV = """
kind: environment
name: bench
models:
  - {{model: openai/bench, api_base: "{url}", api_key: "env:BENCH_KEY", input_cost_per_token: 0, output_cost_per_token: 0}}
"""

#: two models in failover order (the first answers)
FAILOVER_ENV = """
kind: environment
name: bench_failover
models:
  - {{model: openai/bench-first, api_base: "{url}", api_key: "env:BENCH_KEY", input_cost_per_token: 0, output_cost_per_token: 0}}
  - {{model: openai/bench-spare, api_base: "{url}", api_key: "env:BENCH_KEY", input_cost_per_token: 0, output_cost_per_token: 0}}
"""

#: two entries balanced by weight (litellm's Router): the same model behind both, so the script answers either
BALANCED_ENV = """
kind: environment
name: bench_balanced
strategy: load_balance
models:
  - {{model: openai/bench-balanced, name: one, api_base: "{url}", api_key: "env:BENCH_KEY", input_cost_per_token: 0, output_cost_per_token: 0}}
  - {{model: openai/bench-balanced, name: two, api_base: "{url}", api_key: "env:BENCH_KEY", input_cost_per_token: 0, output_cost_per_token: 0}}
"""


async def bare_asyncio(url: str) -> float:
    from flows.llm._litellm import litellm

    lm = litellm()
    window = asyncio.Semaphore(WINDOW)

    async def one(i: int) -> None:
        async with window:
            await lm.acompletion(model="openai/bench-raw", api_base=url, api_key="sk-bench",
                                 messages=[{"role": "user", "content": f"Label topic {i}."}])

    started = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(ITEMS)))
    return time.perf_counter() - started


def prefect_flow(url: str):
    """The flow a Prefect user writes: one task per model call, ``WINDOW`` at a time."""
    from prefect import flow, task
    from prefect.cache_policies import NO_CACHE

    from flows.llm._litellm import litellm

    lm = litellm()

    @task(cache_policy=NO_CACHE, persist_result=False)
    async def label(i: int) -> str:
        resp = await lm.acompletion(model="openai/bench-raw", api_base=url, api_key="sk-bench",
                                    messages=[{"role": "user", "content": f"Label topic {i}."}])
        return resp.choices[0].message.content

    @flow(name="baseline_llm", persist_result=False)
    async def labels() -> list[str]:
        window = asyncio.Semaphore(WINDOW)

        async def one(i: int) -> str:
            async with window:
                return await label.with_options(task_run_name=f"label-{i}")(i)

        return await asyncio.gather(*(one(i) for i in range(ITEMS)))

    def run() -> float:
        started = time.perf_counter()
        out = asyncio.run(labels())
        assert len(out) == ITEMS
        return time.perf_counter() - started

    return run


def ergon(folder: Path, server, variant: str) -> float:
    from flows import runs
    from flows.catalog import Catalog

    process, _, _, model = VARIANTS[variant]
    os.environ["ERGON_DEFINITIONS"] = str(folder)
    catalog = Catalog.load()
    compiled = catalog.compile(process)
    # the model is unknown to litellm, so the schema goes as instructions: script valid answers
    server.script(model, *({"json": {"label": f"label {i}"}} for i in range(ITEMS)))
    started = time.perf_counter()
    # the topics are numbers: 10,000 of them fit the 64 KB context (as ids a large fan-out's
    # items would fetch their rows by); each prompt is "Label topic <n>.", the baseline's
    result = runs.start(compiled, {"topics": list(range(ITEMS))}, catalog=catalog).to_dict()
    elapsed = time.perf_counter() - started
    assert result["status"] == "completed", result
    if ITEMS <= COLLECT_UP_TO:
        assert len(result["context"]["labels"]) == ITEMS
    return elapsed


def _process(process: str, interaction: str, variant: str) -> str:
    gathered = ("      writes: [label]\n    collect: labels\n    writes: [labels]" if ITEMS <= COLLECT_UP_TO
                else "    collect: null")
    return PROCESS.format(name=process, window=WINDOW, interaction=interaction, gathered=gathered,
                          task_runs="node" if variant in ONE_TASK_RUN else "item")


def main() -> None:
    global ITEMS, WINDOW, LATENCY
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--items", type=int, default=ITEMS)
    parser.add_argument("--window", type=int, default=WINDOW)
    parser.add_argument("--latency", type=float, default=LATENCY, help="the server's answer time, seconds")
    parser.add_argument("--sides", default=",".join(["asyncio", "prefect", *VARIANTS]),
                        help="comma-separated sides to run (asyncio, prefect and the variants' names)")
    parser.add_argument("--freeze", action="store_true",
                        help="freeze the heap after setup, as Ergon's one-run processes do (flows/heap.py)")
    args = parser.parse_args()
    ITEMS, WINDOW, LATENCY = args.items, args.window, args.latency
    sides = [side.strip() for side in args.sides.split(",") if side.strip()]
    unknown = set(sides) - {"asyncio", "prefect", *VARIANTS}
    if unknown:
        parser.error(f"unknown side(s) {sorted(unknown)}; choose from asyncio, prefect, {', '.join(VARIANTS)}")
    os.environ["BENCH_KEY"] = "sk-bench"
    prefect_for_benchmark()
    from fake_openai import FakeOpenAI

    server = FakeOpenAI(latency=LATENCY).start()
    # the "model" variant reaches the server the way litellm's standard provider variables say
    os.environ["OPENAI_API_BASE"] = server.url
    os.environ["OPENAI_API_KEY"] = "sk-bench"
    folder = Path(tempfile.mkdtemp(prefix="ergon-bench-defs-"))
    for variant, (process, interaction, target, _) in VARIANTS.items():
        (folder / f"{process}.yaml").write_text(_process(process, interaction, variant))
        (folder / f"{interaction}.yaml").write_text(INTERACTION.format(name=interaction, target=target))
    (folder / "env.yaml").write_text(ENV.format(url=server.url))
    (folder / "failover_env.yaml").write_text(FAILOVER_ENV.format(url=server.url))
    (folder / "balanced_env.yaml").write_text(BALANCED_ENV.format(url=server.url))
    times: dict[str, list[float]] = {side: [] for side in sides}
    #: this process's CPU seconds per run: what the run needed, which a busy server or a neighbour's
    #: steal does not lengthen as it does the wall time (on a 2-core VM it still varies by a third)
    cpu: dict[str, list[float]] = {k: [] for k in times}
    by_hand = prefect_flow(server.url)

    def measure(side: str, run) -> None:
        # each run on an idle Prefect server (its event backlog drained) and a settled heap: benchmarks/settle.py
        wait_until_idle()
        settle_heap()
        started = time.process_time()
        times[side].append(run())
        cpu[side].append(time.process_time() - started)

    if args.freeze:
        gc.collect()
        gc.freeze()
    try:
        for _ in range(args.repeat):
            for side in sides:
                if side == "asyncio":
                    measure(side, lambda: asyncio.run(bare_asyncio(server.url)))
                elif side == "prefect":
                    measure(side, by_hand)
                else:
                    measure(side, lambda side=side: ergon(folder, server, side))
    finally:
        server.stop()
    for side, runs in times.items():
        print(f"  {side:<14} runs: {', '.join(f'{t:.2f}' for t in runs)} s; CPU {', '.join(f'{t:.2f}' for t in cpu[side])} s")
    med = {k: statistics.median(v) for k, v in times.items()}
    cpu_med = {k: statistics.median(v) for k, v in cpu.items()}
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{ITEMS} interaction calls, window {WINDOW}, server latency {LATENCY * 1000:.0f} ms, median of {args.repeat}"
          f"{', heap frozen' if args.freeze else ''}; peak RSS of this process (every side) {peak:.0f} MB")
    if "asyncio" in med:
        print(f"bare asyncio.gather            {med['asyncio']:6.2f} s   CPU {cpu_med['asyncio']:.2f} s")
    for variant in [v for v in ONE_TASK_RUN if v in med and "asyncio" in med]:
        e = med[variant]
        print(f"ergon foreach, {variant:<15} {e:6.2f} s   {e / med['asyncio']:5.2f}× bare asyncio (aim <= 1.3)   "
              f"CPU {cpu_med[variant]:.2f} s   fastest runs {min(times[variant]) / min(times['asyncio']):.2f}×\n"
              f"{'':<31}{paired_ratio(times[variant], times['asyncio']).describe(1.3)}")
    if "prefect" not in med:
        return
    print(f"Prefect flow, a task per call  {med['prefect']:6.2f} s" +
          (f"   ({med['prefect'] / med['asyncio']:.2f}× asyncio)" if "asyncio" in med else "") +
          f"   CPU {cpu_med['prefect']:.2f} s")
    for variant in [v for v in VARIANTS if v in med and v not in ONE_TASK_RUN]:
        e = med[variant]
        print(f"ergon foreach, {variant:<13} {e:6.2f} s   {e / med['prefect']:5.2f}× the Prefect flow (aim <= 1.1), "
              f"{e / med.get('asyncio', float('nan')):.2f}× asyncio   CPU {cpu_med[variant]:.2f} s = "
              f"{cpu_med[variant] / cpu_med['prefect']:.2f}× the flow's   "
              f"fastest runs {min(times[variant]) / min(times['prefect']):.2f}×\n"
              f"{'':<31}{paired_ratio(times[variant], times['prefect']).describe(1.1)}")


if __name__ == "__main__":
    main()
