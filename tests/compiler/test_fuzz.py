"""Property tests: whatever the input, the compiler answers with located diagnostics, never a crash.

Valid definitions (every file under ``definitions/`` and a few small inline processes) are
mutated at random, either as data (delete or rename a key, change a value's type, duplicate a
list item, retarget a `to`/`needs`, put `{{` into a string, swap a node's type) or as text
(truncate, insert a tab, insert `: `), and checked in a workspace that also holds the other,
unmodified definitions (so references resolve as they do for real). For every outcome:

* ``check_workspace`` returns a :class:`Report` and does not raise;
* every diagnostic has a known code, ``line >= 1``, ``col >= 1``, the mutated file's name, a
  message, and prints in the ``FILE:LINE:COL: error[CODE] ...`` form.

User mistakes are diagnostics, never exceptions (``compiler.errors``); a crash found here is a
bug in a pass or in the parser's error translation.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from compiler import CODES, Report, Workspace, check_workspace, load_workspace
from compiler.ir import NODE_TYPES
from compiler.source import load_text
from compiler.workspace import TEST_SUFFIXES, make_unit

ROOT = Path(__file__).resolve().parents[2]
DEFINITIONS = ROOT / "definitions"

SETTINGS = settings(
    max_examples=200,
    deadline=None,
    database=None,  # no .hypothesis/ folder in the repository
    # No shrinking: shrinking a crash inside a 300-line definition can take minutes, and every
    # draw is labelled (seed, op, path, ...) so the unshrunk failing case is readable as it is.
    phases=[Phase.explicit, Phase.generate],
    report_multiple_bugs=False,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

SMALL_PROCESS = """\
format_version: 1
process: fz_small
initial: start
context:
  schema:
    type: object
    properties:
      amount: {type: number}
      decision: {type: string, enum: [approve, reject]}
      note: {type: string}
    required: [amount]
  initial: {note: ""}
nodes:
  start:
    type: condition
    human_description: Route by amount.
    branches:
      - {to: review, when: {">": [{var: amount}, 100]}}
      - {to: approve, default: true}
  review:
    type: human_task
    human_description: A person decides.
    task:
      title: "Review {{ amount }}"
      assignee: group:finance
      fields:
        - {name: decision, type: select, required: true, options: [approve, reject]}
    writes: [decision]
    transitions:
      - {to: done, guard: {"==": [{var: decision}, approve]}}
      - {to: rejected}
  approve:
    type: tool
    human_description: Approve automatically.
    config: {context_update: {decision: approve}}
    writes: [decision]
    transitions: [{to: done}]
  done: {type: final, human_description: Approved.}
  rejected: {type: final, human_description: Rejected.}
"""

SMALL_FANOUT = """\
format_version: 1
process: fz_fanout
initial: each
context:
  schema:
    type: object
    properties:
      items: {type: array, items: {type: string}}
      results: {type: array}
      checks: {type: array}
      a: {type: string}
      b: {type: string}
    required: [items]
nodes:
  each:
    type: foreach
    human_description: One call per item.
    foreach: items
    as: item
    item_id: "{{ item }}"
    max_concurrency: 3
    node: {type: tool, tool: log, input: {message: "{{ item }}"}}
    collect: {into: results, include: [status, index, output, error]}
    failure_policy: collect_errors
    writes: [results]
    transitions: [{to: both}]
  both:
    type: branch
    human_description: Two things at once.
    branches:
      - {id: one, node: {type: tool, config: {context_update: {a: x}}, writes: [a]}}
      - {id: two, node: {type: tool, config: {context_update: {b: y}}, writes: [b]}}
    collect: checks
    writes: [checks, a, b]
    transitions: [{to: done}]
  done: {type: final, human_description: Done.}
"""

SMALL_PIPELINE = """\
kind: pipeline
name: fz_pipeline
context:
  schema:
    type: object
    properties:
      text: {type: string}
      go: {type: boolean}
      left: {type: string}
      right: {type: string}
    required: [text]
  initial: {go: true}
nodes:
  first: {type: tool, tool: noop, human_description: First.}
  left: {type: tool, tool: log, needs: [first], input: {message: "{{ text }}"}, human_description: Left.}
  right:
    type: tool
    needs: [first]
    when: {"==": [{var: go}, true]}
    config: {context_update: {right: done}}
    writes: [right]
    human_description: Right.
  join: {type: tool, tool: noop, needs: [left, right], human_description: Join.}
"""

INLINE = {"fz_small.yaml": SMALL_PROCESS, "fz_fanout.yaml": SMALL_FANOUT, "fz_pipeline.yaml": SMALL_PIPELINE}


def _seed_texts() -> dict[str, str]:
    out: dict[str, str] = {}
    for p in sorted(DEFINITIONS.rglob("*")):
        if p.suffix in (".yaml", ".yml", ".json") and p.is_file() and "tools" not in p.relative_to(DEFINITIONS).parts \
                and not p.name.endswith(TEST_SUFFIXES):  # a test file is no definition (ergon test's)
            out[p.relative_to(ROOT).as_posix()] = p.read_text(encoding="utf-8")
    out.update(INLINE)
    return out


SEEDS: dict[str, str] = _seed_texts()
SEED_NAMES: list[str] = sorted(SEEDS)
SEED_DATA: dict[str, Any] = {name: load_text(text, name).data for name, text in SEEDS.items()}
_CONTEXT_WS = load_workspace([DEFINITIONS])
#: Every seed parsed once, unreported; a check replaces the mutated one with its new version.
_CONTEXT_UNITS = {name: make_unit(load_text(text, name), reported=False) for name, text in SEEDS.items()}


def check_text(file: str, text: str) -> Report:
    """Check ``text`` as ``file`` next to the other (unmodified, unreported) seeds."""
    unit = make_unit(load_text(text, file))
    units = [u for name, u in _CONTEXT_UNITS.items() if name != file]
    return check_workspace(Workspace(units=[*units, unit], tools=_CONTEXT_WS.tools))


def assert_well_formed(report: Report, file: str, text: str) -> None:
    assert isinstance(report, Report)
    for d in report.diagnostics:
        where = f"\n--- diagnostic: {d!r}\n--- input ({file}):\n{text[:3000]}"
        assert d.code in CODES, f"unknown code {d.code!r}{where}"
        assert isinstance(d.line, int) and d.line >= 1, f"line < 1{where}"
        assert isinstance(d.col, int) and d.col >= 1, f"col < 1{where}"
        assert d.file == file, f"diagnostic about another file{where}"
        assert d.message and isinstance(d.message, str), f"empty message{where}"
        assert d.format().startswith(f"{file}:{d.line}:{d.col}: {d.severity}[{d.code}] "), where


# --------------------------------------------------------------------------------------------
# Tree mutations


def _paths(node: Any, path: tuple = ()) -> list[tuple]:
    """Paths of every element below the root (mapping values and list items)."""
    out: list[tuple] = []
    if isinstance(node, dict):
        for k, v in node.items():
            out.append((*path, k))
            out.extend(_paths(v, (*path, k)))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out.append((*path, i))
            out.extend(_paths(v, (*path, i)))
    return out


def _get(root: Any, path: tuple) -> Any:
    for seg in path:
        root = root[seg]
    return root


def _node_ids(tree: Any) -> list[str]:
    nodes = tree.get("nodes") if isinstance(tree, dict) else None
    return [k for k in nodes if isinstance(k, str)] if isinstance(nodes, dict) else []


NAMES = st.sampled_from(["done", "start", "nodes", "type", "x", "", "tool", "interaction", "Review", "a b", "_next_node", "écrit"])
SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**40), 2**40), st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12), NAMES,
)
VALUES = st.one_of(
    SCALARS,
    st.lists(SCALARS, max_size=3),
    st.dictionaries(NAMES, SCALARS, max_size=3),
)
OPS = ["delete", "rename", "replace", "duplicate", "retarget", "braces", "swap_type", "wrap_list", "wrap_dict"]


def mutate(data: st.DataObject, tree: Any) -> Any:
    """Apply one random mutation to ``tree`` in place (the root itself may be replaced)."""
    op = data.draw(st.sampled_from(OPS), label="op")
    paths = _paths(tree)
    if not paths:
        return data.draw(VALUES, label="new root")
    path = data.draw(st.sampled_from(paths), label="path")
    parent, key = _get(tree, path[:-1]), path[-1]
    value = parent[key]
    if op == "delete":
        del parent[key]
    elif op == "rename" and isinstance(parent, dict):
        new = data.draw(st.one_of(NAMES, st.text(min_size=1, max_size=10)), label="new key")
        if new not in parent:
            parent[new] = parent.pop(key)
    elif op == "replace":
        parent[key] = data.draw(VALUES, label="new value")
    elif op == "duplicate" and isinstance(parent, list):
        parent.insert(key, copy.deepcopy(value))
    elif op == "retarget":
        targets = [p for p in paths if p[-1] in ("to", "needs", "initial", "parent", "on_timeout", "foreach", "process", "interaction")]
        if targets:
            tpath = data.draw(st.sampled_from(targets), label="target path")
            choice = data.draw(st.one_of(st.sampled_from(_node_ids(tree) or ["nowhere"]), NAMES), label="target")
            holder = _get(tree, tpath[:-1])
            holder[tpath[-1]] = [choice] if tpath[-1] == "needs" else choice
    elif op == "braces":
        strings = [p for p in paths if isinstance(_get(tree, p), str)]
        if strings:
            spath = data.draw(st.sampled_from(strings), label="string path")
            s = _get(tree, spath)
            at = data.draw(st.integers(0, len(s)), label="at")
            piece = data.draw(st.sampled_from(["{{", "}}", "{{ x ", "{% if %}", "{{ a.b }}", "${", "${x}"]), label="piece")
            _get(tree, spath[:-1])[spath[-1]] = s[:at] + piece + s[at:]
    elif op == "swap_type":
        typed = [p for p in paths if p[-1] == "type" and isinstance(_get(tree, p), str)]
        if typed:
            tpath = data.draw(st.sampled_from(typed), label="type path")
            _get(tree, tpath[:-1])["type"] = data.draw(st.sampled_from([*NODE_TYPES, "activity", "workflow", "select", "bogus"]), label="new type")
    elif op == "wrap_list":
        parent[key] = [value]
    elif op == "wrap_dict":
        parent[key] = {"value": value}
    return tree


def dump(file: str, tree: Any) -> str:
    if file.endswith(".json"):
        return json.dumps(tree, indent=2, ensure_ascii=False)
    return yaml.safe_dump(tree, sort_keys=False, allow_unicode=True, default_flow_style=False)


@SETTINGS
@given(data=st.data())
def test_tree_mutations_never_crash(data: st.DataObject) -> None:
    file = data.draw(st.sampled_from(SEED_NAMES), label="seed")
    tree = copy.deepcopy(SEED_DATA[file])
    for _ in range(data.draw(st.integers(1, 3), label="mutations")):
        tree = mutate(data, tree)
    text = dump(file, tree)
    assert_well_formed(check_text(file, text), file, text)


# --------------------------------------------------------------------------------------------
# Text mutations


@SETTINGS
@given(data=st.data())
def test_text_mutations_never_crash(data: st.DataObject) -> None:
    file = data.draw(st.sampled_from(SEED_NAMES), label="seed")
    text = SEEDS[file]
    for _ in range(data.draw(st.integers(1, 3), label="mutations")):
        op = data.draw(st.sampled_from(["truncate", "tab", "colon", "delete_line", "dedent", "quote"]), label="op")
        at = data.draw(st.integers(0, len(text)), label="at")
        if op == "truncate":
            text = text[:at]
        elif op == "tab":
            text = text[:at] + "\t" + text[at:]
        elif op == "colon":
            text = text[:at] + ": " + text[at:]
        elif op == "quote":
            text = text[:at] + data.draw(st.sampled_from(['"', "'", "{", "[", "&a", "*a", "!!python/object", "%"]), label="piece") + text[at:]
        else:
            lines = text.split("\n")
            n = min(text[:at].count("\n"), len(lines) - 1)
            if op == "delete_line":
                del lines[n]
            else:
                lines[n] = lines[n].lstrip()
            text = "\n".join(lines)
    assert_well_formed(check_text(file, text), file, text)


@SETTINGS
@given(text=st.text(max_size=300))
def test_arbitrary_text_never_crashes(text: str) -> None:
    assert_well_formed(check_text("fz_any.yaml", text), "fz_any.yaml", text)


def test_seeds_are_clean() -> None:
    """The fuzzing starts from valid definitions: a mutation is then the only source of errors."""
    for file, text in SEEDS.items():
        report = check_text(file, text)
        assert not report.diagnostics, "\n".join(d.format() for d in report.diagnostics)
