"""JSON Logic guards (transition guards, condition `when`, pipeline `when`) via datalogic-py.

One engine with only the spec operators (``families=["Core"]``) serves both the checker and the
runtime, so a guard that passes ``ergon check`` is evaluated by exactly the operator set it was
checked against. datalogic reads a Python ``str`` as *JSON text*, so string rules and data are
always passed through ``json.dumps`` (a bare ``"apple"`` rule would otherwise be a parse error).

Every rule is analysed and compiled once and cached by its JSON text: a 1,000-node process whose
guards repeat costs one compile per distinct guard.

One extension, from the Vertesia process format: ``{"artifact_exists": {"var": "path"}}`` (or a
plain ``"path"``) is true when the run has an artifact with that key. The argument names the
artifact, it is not a context read. The rule is rewritten into the Core rule
``{"in": ["path", {"var": "$artifacts"}]}`` before it is checked or compiled, and
:func:`evaluate` puts the run's artifact keys under ``$artifacts`` in the data — asked of the
caller only when the rule uses the extension, so the compiler needs nothing of the store.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import date, datetime, time
from decimal import Decimal
from functools import lru_cache
from typing import Any, Literal

import datalogic_py as dl

__all__ = [
    "ARTIFACT_EXISTS", "ARTIFACTS_KEY", "ENGINE", "OPERATORS", "OPERATOR_ARITY", "GuardInfo", "analyse", "check_rule", "comparisons", "evaluate",
    "pointer_to_path", "rule_reads", "rule_required_reads", "var_sites",
]

#: The process-wide engine: spec operators only (no datetime/extension families).
ENGINE = dl.Engine(families=["Core"])


def _operator_table() -> dict[str, dl.OperatorInfo]:
    table: dict[str, dl.OperatorInfo] = {}
    for op in ENGINE.operators():
        table[op["name"]] = op
        for alias in op.get("aliases") or ():
            table[alias] = op
    return table


_OPS = _operator_table()
#: Every operator name (and alias) a guard may use.
OPERATORS: frozenset[str] = frozenset(_OPS)
# Operators whose argument at this index is evaluated per item (`{"var": ""}` is the item there);
# "last" (`try`, outside the Core family) is the last argument, whatever the count.
_SCOPED: dict[str, int | Literal["last"]] = {
    name: scoped for name, op in _OPS.items() if (scoped := op["scoped_arg"]) is not None
}


def _scoped_index(op: str, arg_count: int) -> int | None:
    """Index of ``op``'s first per-item argument among ``arg_count``, or None when it has none."""
    scoped = _SCOPED.get(op)
    if scoped == "last":
        return max(arg_count - 1, 0)
    return scoped


#: operator → (min args, max args or None)
OPERATOR_ARITY: dict[str, tuple[int, int | None]] = {name: (op["min_args"], op["max_args"]) for name, op in _OPS.items()}
# Operators that test for absence: their arguments are reads that may be unset.
_ABSENCE = frozenset({"missing", "missing_some"})


#: The extension operator and the data key its rewritten form reads (see the module docstring).
ARTIFACT_EXISTS = "artifact_exists"
ARTIFACTS_KEY = "$artifacts"


def _artifact_path(arg: Any) -> str | None:
    """The artifact key of an ``artifact_exists`` argument: ``{"var": "k"}``, ``"k"`` or ``["k"]``."""
    if isinstance(arg, list) and len(arg) == 1:
        arg = arg[0]
    if isinstance(arg, dict) and len(arg) == 1 and "var" in arg:
        arg = arg["var"]
        if isinstance(arg, list) and len(arg) == 1:
            arg = arg[0]
    return arg if isinstance(arg, str) and arg else None


def _expand(rule: Any, pointer: tuple = ()) -> tuple[Any, list[tuple[str, str, str, str]]]:
    """``rule`` with every ``artifact_exists`` rewritten into Core operators, and its problems."""
    if isinstance(rule, list):
        items, problems = [], []
        for i, item in enumerate(rule):
            new, found = _expand(item, (*pointer, i))
            items.append(new)
            problems.extend(found)
        return items, problems
    if not isinstance(rule, dict):
        return rule, []
    if len(rule) == 1 and ARTIFACT_EXISTS in rule:
        path = _artifact_path(rule[ARTIFACT_EXISTS])
        if path is None:
            where = "/" + "/".join(str(p) for p in (*pointer, ARTIFACT_EXISTS))
            return False, [(where, "ArtifactKey", "`artifact_exists` takes one artifact key", "error")]
        return {"in": [path, {"var": ARTIFACTS_KEY}]}, []
    out: dict[str, Any] = {}
    problems = []
    for key, value in rule.items():
        out[key], found = _expand(value, (*pointer, key))
        problems.extend(found)
    return out, problems


@lru_cache(maxsize=4096)
def _core_text(text: str) -> tuple[str, tuple[tuple[str, str, str, str], ...]]:
    """The JSON text of a rule in Core operators only, and the problems of its extensions."""
    if ARTIFACT_EXISTS not in text:
        return text, ()
    expanded, problems = _expand(json.loads(text))
    return json.dumps(expanded), tuple(problems)


def _json(rule: Any) -> str | None:
    try:
        return json.dumps(rule, sort_keys=False, allow_nan=False)
    except (TypeError, ValueError):
        return None


@dataclass(frozen=True, slots=True)
class GuardInfo:
    """What the checker needs to know about one rule."""

    #: (pointer, code, message, severity) from datalogic's checker
    problems: tuple[tuple[str, str, str, str], ...]
    #: first segments of every context path the rule reads
    reads: frozenset[str]
    #: reads without a fallback: not `{"var": [path, default]}` and not under `missing`
    required: frozenset[str]
    #: :func:`var_sites` of the rule
    sites: tuple[tuple[tuple, str, bool], ...] = ()
    #: :func:`comparisons` of the rule
    comparisons: tuple[tuple[tuple, str, str, list, tuple], ...] = ()
    #: whether the rule uses ``artifact_exists`` (its evaluation needs the run's artifact keys)
    uses_artifacts: bool = False


@lru_cache(maxsize=16384)
def _analyse_text(text: str) -> GuardInfo:
    core, extension_problems = _core_text(text)
    problems = extension_problems + tuple(
        (d.get("pointer") or "", d.get("code") or "Invalid", d.get("message") or "invalid rule", d.get("severity") or "error")
        for d in ENGINE.check(core)
    )
    rule = json.loads(text)
    sites = tuple(var_sites(rule))
    reads = {name for _, name, _ in sites}
    required = {name for _, name, needed in sites if needed}
    if not any(p[3] == "error" for p in problems):
        try:
            facts = ENGINE.compile_checked(core).facts()
        except dl.DataLogicError as exc:  # datalogic's checker let it through, its compiler does not: the run would
            facts = None
            problems += (("", "Invalid", str(exc).replace("\n", " ").strip(), "error"),)
        if facts is not None:
            # datalogic sees reads we would miss (nested scopes); ours cover computed paths.
            reads |= {str(path[0]) for path in facts.get("reads", ()) if path and path[0] != ARTIFACTS_KEY}
    return GuardInfo(problems, frozenset(reads), frozenset(required), sites, tuple(comparisons(rule)), core != text)


_BY_REPR: dict[str, GuardInfo] = {}


def analyse(rule: Any) -> GuardInfo:
    """Problems, reads and comparisons of a rule, computed once per distinct rule. Never raises.

    The cache is keyed by ``repr`` (several times cheaper than ``json.dumps`` and just as
    distinguishing: ``True`` and ``1`` differ), so a guard repeated on a thousand transitions
    costs one ``repr`` each.
    """
    key = repr(rule)
    info = _BY_REPR.get(key)
    if info is None:
        text = _json(rule)
        if text is None:
            info = GuardInfo((("", "Unparsable", "a guard must be JSON data (mappings, lists, strings, numbers, booleans)", "error"),),
                             frozenset(), frozenset())
        else:
            info = _analyse_text(text)
        if len(_BY_REPR) > 16384:
            _BY_REPR.clear()
        _BY_REPR[key] = info
    return info


def check_rule(rule: Any) -> list[tuple[str, str, str]]:
    """``(pointer, code, message)`` for each error datalogic finds in ``rule`` (empty = valid)."""
    return [(p, c, m) for p, c, m, sev in analyse(rule).problems if sev == "error"]


def rule_reads(rule: Any) -> set[str]:
    """First segment of every context path the rule reads (``{"var": "a.b"}`` → ``a``)."""
    return set(analyse(rule).reads)


def rule_required_reads(rule: Any) -> set[str]:
    """Reads that have no fallback: a ``var`` with a default or a ``missing`` test tolerates absence."""
    return set(analyse(rule).required)


def _first_segment(path: Any) -> str | None:
    if isinstance(path, (int, float)) and not isinstance(path, bool):
        path = str(path)
    if not isinstance(path, str) or path == "":
        return None
    return path.split(".", 1)[0]


def var_sites(rule: Any, pointer: tuple = ()) -> Iterator[tuple[tuple, str, bool]]:
    """``(path inside the rule, first segment, read without fallback)`` for each context read.

    Covers ``var``/``val`` with a literal path and the names under ``missing``/``missing_some``
    (absence tests: never "required"). A ``var`` with a default (``{"var": ["x", 0]}``) is not
    required either. Inside the per-item argument of ``map``/``filter``/``all``/... a ``var``
    reads the item, not the context, so it is skipped there.
    """
    if isinstance(rule, list):
        for i, item in enumerate(rule):
            yield from var_sites(item, (*pointer, i))
        return
    if not isinstance(rule, dict) or len(rule) != 1:
        return
    (op, args), = rule.items()
    here = (*pointer, op)
    if op == ARTIFACT_EXISTS:
        return  # names an artifact, not a context field
    if op in ("var", "val"):
        if isinstance(args, list):
            path, has_default = (args[0] if args else None), len(args) > 1
            for i, extra in enumerate(args[1:], 1):
                yield from var_sites(extra, (*here, i))
            path_pointer = (*here, 0)
        else:
            path, has_default, path_pointer = args, False, here
        if isinstance(path, (dict, list)):
            yield from var_sites(path, path_pointer)
        elif (first := _first_segment(path)) is not None:
            yield path_pointer, first, not has_default
        return
    if op in _ABSENCE:
        names, base = (args, here) if isinstance(args, list) else ([args], None)
        if op == "missing_some" and isinstance(args, list) and len(args) == 2 and isinstance(args[1], list):
            names, base = args[1], (*here, 1)
        for i, name in enumerate(names):
            at = (*base, i) if base is not None else here
            if isinstance(name, (dict, list)):
                yield from var_sites(name, at)
            elif (first := _first_segment(name)) is not None:
                yield at, first, False
        return
    scoped_index = _scoped_index(op, len(args) if isinstance(args, list) else 1)
    if isinstance(args, list):
        for i, arg in enumerate(args):
            if scoped_index is None or i < scoped_index:
                yield from var_sites(arg, (*here, i))
    elif scoped_index is None or scoped_index > 0:
        yield from var_sites(args, here)


def comparisons(rule: Any, pointer: tuple = ()) -> Iterator[tuple[tuple, str, str, list[Any], tuple]]:
    """Equality/membership tests of a context field against literals, for enum checks.

    Yields ``(pointer of the literal, operator, field path, literal values, pointer of the
    comparison)`` for ``==, !=, ===, !==`` with a ``var`` on one side and a scalar on the other,
    and for ``in`` with a ``var`` first and a literal list second.
    """
    if isinstance(rule, list):
        for i, item in enumerate(rule):
            yield from comparisons(item, (*pointer, i))
        return
    if not isinstance(rule, dict) or len(rule) != 1:
        return
    (op, args), = rule.items()
    if op in ("==", "!=", "===", "!==") and isinstance(args, list) and len(args) == 2:
        for side in (0, 1):
            field, literal = args[side], args[1 - side]
            path = _var_path(field)
            if path is not None and _is_scalar(literal):
                yield (*pointer, op, 1 - side), op, path, [literal], (*pointer, op)
                return
    if op == "in" and isinstance(args, list) and len(args) == 2:
        path = _var_path(args[0])
        if path is not None and isinstance(args[1], list) and all(_is_scalar(v) for v in args[1]):
            for i, v in enumerate(args[1]):
                yield (*pointer, op, 1, i), op, path, [v], (*pointer, op)
            return
    if op in _SCOPED:  # the per-item argument compares items, not context fields
        arg_list = args if isinstance(args, list) else [args]
        for i, arg in enumerate(arg_list[: _scoped_index(op, len(arg_list))]):
            yield from comparisons(arg, (*pointer, op, i) if isinstance(args, list) else (*pointer, op))
        return
    if op in ("var", "val"):
        return
    if isinstance(args, list):
        for i, arg in enumerate(args):
            yield from comparisons(arg, (*pointer, op, i))
    else:
        yield from comparisons(args, (*pointer, op))


def _var_path(value: Any) -> str | None:
    if isinstance(value, dict) and len(value) == 1 and "var" in value:
        path = value["var"]
        if isinstance(path, list) and len(path) == 1:
            path = path[0]
        if isinstance(path, str) and path:
            return path
    return None


def _is_scalar(value: Any) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))


def pointer_to_path(pointer: str, rule: Any = None) -> tuple:
    """A JSON pointer from datalogic (``"/or/0"``) → document path segments (``("or", 0)``).

    With ``rule`` the segments follow the actual containers (a list index becomes an ``int``);
    without it every all-digit token is taken as a list index.
    """
    if not pointer or pointer == "/":
        return ()
    out: list[Any] = []
    node = rule
    for token in pointer.lstrip("/").split("/"):
        token = token.replace("~1", "/").replace("~0", "~")
        if rule is not None:
            if isinstance(node, list) and token.isdigit():
                seg: Any = int(token)
                node = node[seg] if seg < len(node) else None
            else:
                seg = token
                node = node.get(token) if isinstance(node, dict) else None
        else:
            seg = int(token) if token.isdigit() else token
        out.append(seg)
    return tuple(out)


# --------------------------------------------------------------------------------------------
# Runtime


@lru_cache(maxsize=4096)
def _compiled(text: str):
    return ENGINE.compile_checked(text)


def evaluate(rule: Any, data: Any, artifacts: Callable[[], Iterable[str]] | None = None) -> bool:
    """Whether ``rule`` holds for ``data`` (JSON Logic truthiness). Compiled once per rule.

    ``data`` is normalised to JSON first (datalogic refuses ``Decimal``/``datetime``); values
    JSON cannot represent are passed as their string form. ``artifacts`` returns the run's
    artifact keys; it is called only when the rule uses ``artifact_exists`` (none: no artifacts).
    A comparison whose operands are not numbers (``"abc" >= 1``) is false, as in JavaScript.
    Raises :class:`datalogic_py.DataLogicError` subclasses on an invalid rule or a failing evaluation.
    """
    text = _json(rule)
    if text is None:
        raise ValueError("a guard must be JSON data")
    core, problems = _core_text(text)
    if problems:
        raise ValueError(problems[0][2])
    if core != text:
        keys = sorted(set(artifacts())) if artifacts is not None else []
        data = {**data, ARTIFACTS_KEY: keys} if isinstance(data, dict) else {ARTIFACTS_KEY: keys}
        text = core
    data_text = json.dumps(data, default=_jsonable)
    try:
        result = _compiled(text).evaluate(data_text)
    except dl.EvaluateError as exc:
        # A comparison of values that are no numbers ("abc" >= 1, a list == 3): datalogic throws
        # NaN where JSON Logic's reference semantics (JavaScript's) make the comparison false.
        if "NaN" in str(exc):
            return False
        raise
    return bool(ENGINE.truthy(json.dumps(result, default=_jsonable)))


def _jsonable(value: Any) -> Any:
    """``json.dumps`` fallback: numbers stay numbers, dates become ISO text, the rest text."""
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, (datetime, date, time)):
        return value.isoformat()
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json")
    return str(value)
