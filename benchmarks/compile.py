"""Compiler benchmark: how long each stage takes on large generated definitions.

Not a test. Run ``python benchmarks/compile.py`` (from the repository root, with the project's
virtualenv); ``--nodes N`` changes the size, ``--repeat R`` the number of timed runs (the best
run is reported, as ``timeit`` does, since the minimum is the least noisy estimate).

Two definitions of about ``N`` nodes each are generated as YAML text:

* a **process**: a chain of segments; each segment sets a flag with a tool node (with a
  ``context_update`` and a guarded transition), branches on it with a condition node into two
  tool nodes that rejoin; every few segments a human task or a foreach node is added. Every
  field written is declared in ``context.schema`` and every read field is set on every path, so
  the definition checks clean (a benchmark of the error path would measure something else);
* a **pipeline**: layers of parallel tool nodes, each needing two nodes of the layer before,
  each writing its own field (no write races), some with a ``when``.

Stages timed (each on its own, best of R runs):

* ``load``  — YAML text → raw tree and source map (``compiler.source.load_text``);
* ``parse`` — raw tree → frozen IR (``compiler.parse.parse_definition``);
* ``check`` — every pass (``compiler.check.check_workspace`` on the parsed workspace);
* ``lower`` — parsed definition → executable Plan (``compiler.plan.build_plan``), when
  ``compiler/plan.py`` exists.

The aim (``benchmarks/README.md``): checking and lowering cost no more than a small multiple of
reading the YAML, i.e. ``(check + lower) / load`` stays low, and a 1,000-node definition compiles
in well under a second.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from compiler.check import check_workspace  # noqa: E402
from compiler.parse import parse_definition  # noqa: E402
from compiler.passes import PASSES  # noqa: E402
from compiler.source import load_text  # noqa: E402
from compiler.workspace import Workspace, make_unit  # noqa: E402

try:  # the Plan is written by another part of the project; the benchmark runs without it
    from compiler.plan import build_plan  # noqa: E402
except ImportError:  # pragma: no cover - depends on the checkout
    build_plan = None  # type: ignore[assignment]


# --------------------------------------------------------------------------------------------
# Generators


def generate_process(target_nodes: int) -> dict[str, Any]:
    """A clean process of about ``target_nodes`` nodes (see the module docstring)."""
    props: dict[str, Any] = {
        "amount": {"type": "number"},
        "items": {"type": "array", "maxItems": 1000, "items": {"type": "string"}},
        "note": {"type": "string"},
    }
    nodes: dict[str, Any] = {}
    seg = 0
    first = "s0_flag"

    def meta(phase: int, lane: str, order: int) -> dict[str, Any]:
        return {"phase": f"phase_{phase // 10}", "lane": lane, "order": order}

    while len(nodes) < target_nodes - 1:
        s = f"s{seg}"
        nxt = f"s{seg + 1}_flag"
        flag, left, right = f"{s}_ok", f"{s}_left", f"{s}_right"
        props[flag] = {"type": "boolean"}
        props[left] = {"type": "string"}
        props[right] = {"type": "string"}
        nodes[f"{s}_flag"] = {
            "type": "tool",
            "human_description": f"Sets the flag of segment {seg}.",
            "config": {"context_update": {flag: seg % 3 != 0}},
            "writes": [flag],
            "metadata": meta(seg, "tooling", seg * 10),
            "transitions": [
                {"to": f"{s}_route", "guard": {"or": [{"==": [{"var": flag}, True]}, {"==": [{"var": flag}, False]}]}},
                {"to": f"{s}_route"},
            ],
        }
        nodes[f"{s}_route"] = {
            "type": "condition",
            "human_description": f"Routes segment {seg} by its flag and the amount.",
            "metadata": meta(seg, "policy", seg * 10 + 1),
            "branches": [
                {"to": f"{s}_a", "when": {"and": [{"==": [{"var": flag}, True]}, {">": [{"var": "amount"}, seg]}]}, "label": "flag set"},
                {"to": f"{s}_b", "default": True, "label": "otherwise"},
            ],
        }
        nodes[f"{s}_a"] = {
            "type": "tool",
            "human_description": "Left arm.",
            "tool": "log",
            "input": {"message": f"amount {{{{ amount }}}}, flag {{{{ {flag} }}}}"},
            "metadata": meta(seg, "tooling", seg * 10 + 2),
            "transitions": [{"to": f"{s}_a2"}],
        }
        nodes[f"{s}_a2"] = {
            "type": "tool",
            "human_description": "Left arm, second step.",
            "config": {"context_update": {left: "left"}},
            "writes": [left],
            "metadata": meta(seg, "tooling", seg * 10 + 3),
            "transitions": [{"to": f"{s}_join"}],
        }
        nodes[f"{s}_b"] = {
            "type": "tool",
            "human_description": "Right arm.",
            "config": {"context_update": {right: "right"}},
            "writes": [right],
            "metadata": meta(seg, "tooling", seg * 10 + 4),
            "transitions": [{"to": f"{s}_join"}],
        }
        join_next = nxt
        if seg % 7 == 3:  # a human task
            decision = f"{s}_decision"
            props[decision] = {"type": "string", "enum": ["approve", "reject"]}
            nodes[f"{s}_task"] = {
                "type": "human_task",
                "human_description": "A person approves the segment.",
                "task": {
                    "title": f"Approve segment {seg} for {{{{ amount }}}}",
                    "assignee": "group:reviewers",
                    "fields": [{"name": decision, "type": "select", "required": True, "options": ["approve", "reject"]}],
                },
                "writes": [decision],
                "metadata": meta(seg, "reviewers", seg * 10 + 6),
                "transitions": [
                    {"to": nxt, "guard": {"==": [{"var": decision}, "approve"]}, "label": "approved"},
                    {"to": "rejected", "label": "rejected"},
                ],
            }
            join_next = f"{s}_task"
        elif seg % 7 == 5:  # a foreach
            results = f"{s}_results"
            props[results] = {"type": "array", "items": {"type": "object"}}
            nodes[f"{s}_each"] = {
                "type": "foreach",
                "human_description": "Handles every item.",
                "foreach": "items",
                "as": "item",
                "item_id": "{{ item }}",
                "max_concurrency": 4,
                "node": {"type": "tool", "tool": "log", "input": {"message": "{{ item }} of {{ amount }}"}},
                "collect": {"into": results, "include": ["status", "index", "item_id", "output", "error"]},
                "failure_policy": "collect_errors",
                "writes": [results],
                "metadata": meta(seg, "tooling", seg * 10 + 7),
                "transitions": [{"to": nxt}],
            }
            join_next = f"{s}_each"
        nodes[f"{s}_join"] = {
            "type": "tool",
            "human_description": "Rejoins the two arms.",
            "tool": "log",
            "input": {"message": f"segment {seg} done: {{{{ {flag} }}}}"},
            "metadata": meta(seg, "tooling", seg * 10 + 5),
            "transitions": [{"to": join_next}],
        }
        seg += 1
    last = f"s{seg}_flag"  # the `nxt` of the last segment: the end
    nodes[last] = {"type": "final", "human_description": "Done.", "metadata": {"phase": "end", "lane": "outcome", "order": 0}}
    nodes["rejected"] = {"type": "final", "human_description": "Rejected.", "metadata": {"phase": "end", "lane": "outcome", "order": 1}}
    return {
        "format_version": 1,
        "process": "bench_process",
        "description": "Generated benchmark process.",
        "initial": first,
        "context": {
            "schema": {"type": "object", "properties": props, "required": ["amount", "items"]},
            "initial": {"note": ""},
        },
        "nodes": nodes,
    }


def generate_pipeline(target_nodes: int, width: int = 40) -> dict[str, Any]:
    """A clean pipeline of ``target_nodes`` nodes in layers of ``width`` parallel nodes."""
    props: dict[str, Any] = {"text": {"type": "string"}, "go": {"type": "boolean"}}
    nodes: dict[str, Any] = {}
    layer: list[str] = []
    n = 0
    depth = 0
    while n < target_nodes:
        current: list[str] = []
        for i in range(min(width, target_nodes - n)):
            nid = f"l{depth}_n{i}"
            field = f"{nid}_out"
            props[field] = {"type": "string"}
            node: dict[str, Any] = {
                "type": "tool",
                "human_description": f"Node {i} of layer {depth}.",
                "metadata": {"phase": f"layer_{depth}", "lane": f"lane_{i % 4}", "order": i},
            }
            if layer:
                a, b = layer[i % len(layer)], layer[(i * 7 + 1) % len(layer)]
                node["needs"] = sorted({a, b})
                if i % 3 == 0:  # a template over what it needs
                    node["config"] = {"context_update": {field: f"{{{{ {a}_out }}}} {{{{ text }}}}"}}
                else:
                    node["config"] = {"context_update": {field: f"{depth}/{i}"}}
            else:
                node["config"] = {"context_update": {field: "start"}}
            if i % 10 == 9:
                node["when"] = {"==": [{"var": "go"}, True]}
            node["writes"] = [field]
            nodes[nid] = node
            current.append(nid)
            n += 1
        layer = current
        depth += 1
    return {
        "kind": "pipeline",
        "name": "bench_pipeline",
        "description": "Generated benchmark pipeline.",
        "context": {"schema": {"type": "object", "properties": props, "required": ["text"]}, "initial": {"go": True}},
        "nodes": nodes,
    }


# --------------------------------------------------------------------------------------------
# Timing

KEEP_GC = False


def best_of(fn: Callable[[], Any], repeat: int) -> tuple[float, float]:
    """(best, median) wall time of ``repeat`` calls, in seconds.

    As ``timeit`` does, the garbage collector is paused while a call runs (after a full
    collection), so that a collection triggered by earlier allocations is not billed to
    whichever stage happens to be running; ``--gc`` keeps it on.
    """
    times = []
    for _ in range(repeat):
        gc.collect()
        if not KEEP_GC:
            gc.disable()
        try:
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        finally:
            gc.enable()
    return min(times), statistics.median(times)


def bench(name: str, text: str, repeat: int) -> dict[str, Any]:
    file = f"{name}.yaml"
    doc = load_text(text, file)
    unit = make_unit(doc)
    ws = Workspace(units=[unit])
    report = check_workspace(ws)
    row: dict[str, Any] = {
        "name": name,
        "nodes": len((doc.data or {}).get("nodes", {})),
        "kb": len(text.encode()) / 1024,
        "diagnostics": len(report.diagnostics),
        "first": report.diagnostics[0].format() if report.diagnostics else None,
    }
    row["load"] = best_of(lambda: load_text(text, file), repeat)
    row["parse"] = best_of(lambda: parse_definition(doc.data), repeat)
    row["check"] = best_of(lambda: check_workspace(ws), repeat)
    row["passes"] = {
        f"{run.__module__.rsplit('.', 1)[-1]}": best_of(lambda run=run: list(run(unit, ws)), repeat)
        for run in PASSES
    } if unit.defn is not None else {}
    if build_plan is not None and unit.defn is not None:
        row["lower"] = best_of(lambda: build_plan(unit, ws), repeat)
    else:
        row["lower"] = None
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=1000, help="nodes per generated definition (default 1000)")
    ap.add_argument("--repeat", type=int, default=5, help="timed runs per stage; the best is reported (default 5)")
    ap.add_argument("--write", type=Path, help="also write the generated YAML files into this folder")
    ap.add_argument("--passes", action="store_true", help="also print the time of each pass (best of R, ms)")
    ap.add_argument("--gc", action="store_true", help="keep the garbage collector on while timing")
    args = ap.parse_args(argv)
    global KEEP_GC
    KEEP_GC = args.gc

    texts = {
        "process": yaml.safe_dump(generate_process(args.nodes), sort_keys=False, width=120),
        "pipeline": yaml.safe_dump(generate_pipeline(args.nodes), sort_keys=False, width=120),
    }
    if args.write:
        args.write.mkdir(parents=True, exist_ok=True)
        for name, text in texts.items():
            (args.write / f"bench_{name}.yaml").write_text(text, encoding="utf-8")

    print(f"compiler benchmark: best of {args.repeat} runs (median in brackets), milliseconds"
          + (", garbage collector on" if args.gc else ""))
    if build_plan is None:
        print("lower: not available (compiler/plan.py is missing)")
    header = f"{'definition':<10} {'nodes':>5} {'KB':>6} {'load':>16} {'parse':>16} {'check':>16} {'lower':>16} {'(check+lower)/load':>19}"
    print(header)
    print("-" * len(header))
    total_load = total_rest = 0.0
    for name, text in texts.items():
        row = bench(name, text, args.repeat)

        def cell(v: tuple[float, float] | None) -> str:
            return "n/a".rjust(16) if v is None else f"{v[0] * 1000:8.1f} [{v[1] * 1000:5.1f}]".rjust(16)

        lower_best = row["lower"][0] if row["lower"] else 0.0
        ratio = (row["check"][0] + lower_best) / row["load"][0]
        total_load += row["load"][0]
        total_rest += row["check"][0] + lower_best
        print(f"{name:<10} {row['nodes']:>5} {row['kb']:>6.0f} {cell(row['load'])} {cell(row['parse'])} {cell(row['check'])} {cell(row['lower'])} {ratio:>19.2f}")
        if args.passes:
            print("  " + ", ".join(f"{k} {v[0] * 1000:.1f}" for k, v in sorted(row["passes"].items(), key=lambda kv: -kv[1][0])))
        if row["diagnostics"]:
            print(f"  warning: the generated {name} has {row['diagnostics']} diagnostic(s); first: {row['first']}")
    print(f"\n(check + lower) / load over both definitions: {total_rest / total_load:.2f}"
          + ("" if build_plan is not None else "  (lower not available)"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
