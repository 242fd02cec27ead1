"""What a case expected against what its run did: the differences, each readable on its own.

Only what ``expect`` gives is compared. ``context`` is a subset: each expected key must be in the
final context with an equal value (JSON equality: ``1 == 1.0``, key order ignored); other keys of
the context are not looked at. ``calls`` compares the named tools and interactions only; a name
never called counts 0. ``error`` is text the run's error must contain. ``refused`` is the exact
list of task nodes whose answer was refused for who gave it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from flows.testing.spec import Expect

#: Marks a context key the run's final context does not have.
MISSING = "(missing)"


@dataclass(frozen=True)
class Actual:
    """What a case's run did."""

    status: str
    outcome: str | None
    route: list[str]
    context: dict[str, Any]
    calls: dict[str, int]
    error: str | None
    #: the human-task nodes whose answer was refused for who gave it, in order
    refused: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Difference:
    """One expectation not met: ``what`` (``route``, ``context.total``, ``calls.post``, ``status``…),
    the expected and the actual value."""

    what: str
    expected: Any
    actual: Any

    def as_dict(self) -> dict[str, Any]:
        return {"what": self.what, "expected": self.expected, "actual": self.actual}


def differences(expect: Expect, actual: Actual) -> list[Difference]:
    """Every way ``actual`` differs from ``expect`` (empty: the case passes)."""
    found: list[Difference] = []
    if expect.status is not None and expect.status != actual.status:
        found.append(Difference("status", expect.status, actual.status))
    if expect.outcome is not None and expect.outcome != actual.outcome:
        found.append(Difference("outcome", expect.outcome, actual.outcome))
    if expect.route is not None and list(expect.route) != actual.route:
        found.append(Difference("route", list(expect.route), actual.route))
    for key, value in (expect.context or {}).items():
        if key not in actual.context:
            found.append(Difference(f"context.{key}", value, MISSING))
        elif not _same(value, actual.context[key]):
            found.append(Difference(f"context.{key}", value, actual.context[key]))
    for name, count in (expect.calls or {}).items():
        if actual.calls.get(name, 0) != count:
            found.append(Difference(f"calls.{name}", count, actual.calls.get(name, 0)))
    if expect.refused is not None and list(expect.refused) != actual.refused:
        found.append(Difference("refused", list(expect.refused), actual.refused))
    if expect.error is not None and expect.error not in (actual.error or ""):
        found.append(Difference("error", f"… {expect.error} …", actual.error))
    return found


def _same(a: Any, b: Any) -> bool:
    """Equal as JSON values: numbers by value (but a boolean is not a number), containers deeply."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def route_difference(expected: list[str], actual: list[str]) -> str:
    """Where two routes part: ``first differs at step 3: expected `post`, took `rejected```."""
    for i, (want, took) in enumerate(zip(expected, actual, strict=False)):
        if want != took:
            return f"they part at step {i + 1}: expected `{want}`, the run took `{took}`"
    if len(expected) > len(actual):
        return f"the run stopped after `{actual[-1]}`; expected next `{expected[len(actual)]}`" if actual \
            else f"the run visited nothing; expected `{expected[0]}` first"
    return f"the run went on after `{expected[-1]}` to `{actual[len(expected)]}`" if expected \
        else f"the run visited `{actual[0]}` first"


def difference_lines(result: Any) -> list[str]:
    """The readable lines of a failed case's differences (what ``ergon test`` prints under it, and
    the pytest plugin's report of a failed item): ``result`` is a runner's ``CaseResult``."""
    lines = []
    for d in result.differences:
        if d.what == "route":
            lines.append(f"route: {route_difference(d.expected, d.actual)}")
            lines.append(f"  expected: {' → '.join(d.expected) or '(nothing)'}")
            lines.append(f"  actual:   {' → '.join(d.actual) or '(nothing)'}")
        elif d.what == "error":
            lines.append(f"error: expected the run's error to contain {_shown(d.expected[2:-2])}, got {_shown(d.actual)}")
        else:
            lines.append(f"{d.what}: expected {_shown(d.expected)}, got {_shown(d.actual)}")
    if result.actual.error and not any(d.what == "error" for d in result.differences):
        lines.append(f"the run ended {result.actual.status}: {result.actual.error}")
    return lines


def _shown(value: Any) -> str:
    text = json.dumps(value, default=str, ensure_ascii=False) if not isinstance(value, str) or value == MISSING \
        else f"`{value}`"
    return text if len(text) <= 200 else text[:199] + "…"
