"""A seeded mutation fuzzer for definition files: hostile and broken input must give diagnostics.

Each case takes one seed — a file under ``definitions/`` or a golden valid fixture
(``tests/fixtures/seed_examples``, ``tests/fixtures/environments``, ``forms``, ``interactions``) —
applies one mutation of a named kind, and checks the result the way ``ergon check`` does (beside
the other, unmodified definitions, so references resolve as they do for real). A case passes
when the check returns a report whose diagnostics are well formed, within :data:`CASE_SECONDS`,
and the process's peak memory stays under :data:`PEAK_MB`. A case is reproducible from its
number alone (``random.Random(case)``), so a failure names the case to re-run.

The kinds cover what a probe of hostile files found (alias bombs, self-aliases, nesting, long
numbers, a file of only ``null``, sub-process cycles, huge strings, binary bytes) and random
edits of structure and text. ``tests/reliability/test_fuzz_definitions.py`` runs a fixed number of cases (in a fresh interpreter) in
CI; ``benchmarks/fuzz.py`` runs many more and prints counts per kind.
"""

from __future__ import annotations

import json
import random
import resource
import signal
import time
import traceback
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from compiler import CODES, Workspace, check_workspace, load_workspace
from compiler.source import load_text
from compiler.workspace import make_unit

ROOT = Path(__file__).resolve().parents[2]
SEED_FOLDERS = [ROOT / "definitions", *(ROOT / "tests" / "fixtures" / name
                                       for name in ("seed_examples", "environments", "forms", "interactions"))]
#: A case that takes longer than this is a hang.
CASE_SECONDS = 5
#: The process's peak resident memory may not pass this while cases run.
PEAK_MB = 500


def _seed_files() -> dict[str, str]:
    out: dict[str, str] = {}
    for folder in SEED_FOLDERS:
        for path in sorted(folder.rglob("*")):
            if path.suffix in (".yaml", ".yml", ".json") and path.is_file() and "tools" not in path.parts:
                out[path.relative_to(ROOT).as_posix()] = path.read_text(encoding="utf-8")
    return out


SEEDS = _seed_files()
_TOOLS = load_workspace([ROOT / "definitions"]).tools
_OTHERS = {name: make_unit(load_text(text, name), reported=False) for name, text in SEEDS.items()}


# --------------------------------------------------------------------------------------------
# Mutations: (rng, seed text, seed file name) -> new text


def _data(text: str, name: str) -> Any:
    return load_text(text, name).data


def _dump(tree: Any, name: str) -> str:
    if name.endswith(".json"):
        return json.dumps(tree, indent=2, ensure_ascii=False, default=str)
    return yaml.safe_dump(tree, sort_keys=False, allow_unicode=True)


def _containers(tree: Any) -> list[tuple[Any, Any]]:
    """(container, key) of every value in the tree, depth first."""
    found: list[tuple[Any, Any]] = []
    stack = [tree]
    while stack:
        here = stack.pop()
        items = here.items() if isinstance(here, dict) else enumerate(here) if isinstance(here, list) else ()
        for key, value in list(items):
            found.append((here, key))
            stack.append(value)
    return found


def _tree_edit(edit: Callable[[random.Random, Any, Any, Any], None]) -> Callable[[random.Random, str, str], str]:
    def mutation(rng: random.Random, text: str, name: str) -> str:
        tree = _data(text, name)
        spots = _containers(tree)
        if not spots:
            return text
        holder, key = rng.choice(spots)
        edit(rng, tree, holder, key)
        return _dump(tree, name)

    return mutation


JUNK = [None, True, 0, -1, 2**31, 3.5, "", "x", "{{", "${x}", "{{ nope }}", [], {}, ["a"], {"type": "bogus"}, "nowhere"]


def _delete(rng, tree, holder, key):
    del holder[key]


def _replace(rng, tree, holder, key):
    holder[key] = rng.choice(JUNK)


def _rename(rng, tree, holder, key):
    if isinstance(holder, dict):
        holder[rng.choice(["type", "to", "nodes", "writes", "tool", "x", "é", "a b"]) + str(rng.randint(0, 3))] = holder.pop(key)


def _duplicate(rng, tree, holder, key):
    if isinstance(holder, list):
        holder.insert(key, holder[key])
    else:
        holder[f"{key}_copy"] = holder[key]


def _retarget(rng, tree, holder, key):
    targets = [(h, k) for h, k in _containers(tree) if k in ("to", "initial", "process", "interaction", "tool", "needs")]
    if targets:
        h, k = rng.choice(targets)
        nodes = list(tree.get("nodes") or {}) if isinstance(tree, dict) and isinstance(tree.get("nodes"), dict) else []
        h[k] = rng.choice([*nodes, "nowhere", "", "sys:Nope"]) if k != "needs" else [rng.choice([*nodes, "ghost"])]


def _self_call(rng, tree, holder, key):
    """A process node that runs the definition it is in (a sub-process cycle)."""
    if isinstance(tree, dict) and isinstance(tree.get("nodes"), dict) and tree["nodes"]:
        first = next(iter(tree["nodes"]))
        tree["nodes"][first] = {"type": "process", "process": tree.get("process") or tree.get("name") or "x",
                                "transitions": [{"to": first}]}


def _text_edit(edit: Callable[[random.Random, str], str]) -> Callable[[random.Random, str, str], str]:
    return lambda rng, text, name: edit(rng, text)


def _truncate(rng: random.Random, text: str) -> str:
    return text[: rng.randint(0, len(text))]


def _insert(rng: random.Random, text: str) -> str:
    at = rng.randint(0, len(text))
    return text[:at] + rng.choice(["\t", ": ", "{{", "}}", "&a ", "*a", "- ", "\n  ", "\x00", "\ufeff", "'", '"', "#"]) + text[at:]


def _alias_bomb(rng: random.Random, text: str) -> str:
    depth, width = rng.randint(5, 12), rng.randint(5, 12)
    lines = [f"l0: &l0 [{', '.join(['lol'] * width)}]"]
    lines += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * width)}]" for i in range(1, depth)]
    return "\n".join(lines) + "\n" + (text if rng.random() < 0.5 else "")


def _self_alias(rng: random.Random, text: str) -> str:
    return rng.choice(["a: &a [*a]\n", "a: &a {b: *a}\n", "kind: process\nnodes: &n {x: *n}\n"])


def _deep(rng: random.Random, text: str) -> str:
    depth = rng.choice([99, 101, 500, 5000, 50000])
    opener, closer = rng.choice([("[", "]"), ("{a: ", "}")])
    return "a: " + opener * depth + closer * depth + "\n"


def _long_number(rng: random.Random, text: str) -> str:
    return text.replace("1", "9" * rng.choice([4301, 10_000, 100_000]), 1) if "1" in text else f"a: {'9' * 5000}\n"


def _only(rng: random.Random, text: str) -> str:
    return rng.choice(["null\n", "~\n", "", "# nothing\n", "42\n", "- a\n- b\n", "---\n---\n", "'text'\n"])


def _huge_string(rng: random.Random, text: str) -> str:
    return text + f"\nhuge: \"{'x' * rng.choice([70_000, 1_000_000, 5_000_000])}\"\n"


def _binary(rng: random.Random, text: str) -> str:
    return bytes(rng.randrange(256) for _ in range(rng.randint(1, 2000))).decode("latin-1")


MUTATIONS: dict[str, Callable[[random.Random, str, str], str]] = {
    "delete_key": _tree_edit(_delete),
    "replace_value": _tree_edit(_replace),
    "rename_key": _tree_edit(_rename),
    "duplicate": _tree_edit(_duplicate),
    "retarget": _tree_edit(_retarget),
    "self_call": _tree_edit(_self_call),
    "truncate": _text_edit(_truncate),
    "insert_text": _text_edit(_insert),
    "alias_bomb": _text_edit(_alias_bomb),
    "self_alias": _text_edit(_self_alias),
    "deep_nesting": _text_edit(_deep),
    "long_number": _text_edit(_long_number),
    "only_scalar": _text_edit(_only),
    "huge_string": _text_edit(_huge_string),
    "binary": _text_edit(_binary),
}


# --------------------------------------------------------------------------------------------
# Running cases


@dataclass
class Tally:
    """What a batch of cases did."""

    cases: Counter = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)
    slowest: float = 0.0
    seconds: float = 0.0

    @property
    def peak_mb(self) -> float:
        # VmHWM is this process image's own peak; ru_maxrss keeps the parent's across fork + exec
        try:
            for line in Path("/proc/self/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
        except OSError:
            pass
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class _Hang(Exception):
    pass


def _alarm(signum: int, frame: Any) -> None:
    raise _Hang()


def _problem(report: Any, file: str) -> str | None:
    for d in report.diagnostics:
        if d.code not in CODES or d.line < 1 or d.col < 1 or d.file != file or not d.message:
            return f"malformed diagnostic {d!r}"
    return None


def run_case(case: int, tally: Tally) -> None:
    """One case: a mutation of one seed, checked; any failure is appended to ``tally``."""
    rng = random.Random(case)
    name = rng.choice(sorted(SEEDS))
    kind = rng.choice(sorted(MUTATIONS))
    tally.cases[kind] += 1
    started = time.perf_counter()
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, CASE_SECONDS)
    try:
        text = MUTATIONS[kind](rng, SEEDS[name], name)
        unit = make_unit(load_text(text, name))
        others = [u for n, u in _OTHERS.items() if n != name]
        report = check_workspace(Workspace(units=[*others, unit], tools=_TOOLS))
        problem = _problem(report, name)
        if problem:
            tally.failures.append(f"case {case} ({kind} on {name}): {problem}")
    except _Hang:
        tally.failures.append(f"case {case} ({kind} on {name}): no answer within {CASE_SECONDS} s")
    except BaseException as exc:  # noqa: BLE001 - a traceback is exactly what this looks for
        tally.failures.append(f"case {case} ({kind} on {name}): {type(exc).__name__}: {exc}\n"
                              + "".join(traceback.format_exception(exc))[-2000:])
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    took = time.perf_counter() - started
    tally.slowest = max(tally.slowest, took)
    tally.seconds += took


def run_cases(first: int, count: int) -> Tally:
    tally = Tally()
    for case in range(first, first + count):
        run_case(case, tally)
    return tally
