"""The results of ``ergon test`` as JUnit XML, the report format CI systems read.

One ``<testsuite>`` per test file (its path as the name), one ``<testcase>`` per case run
(``classname`` the definition, ``name`` the case, ``time`` in seconds), a ``<failure>`` in a case
that failed with its differences as text, and an ``<error>`` case for each problem of a test
file that kept it from running — so a CI page shows a broken test file, not an empty suite.

With ``--explore``, one more suite per explored definition (``explore: NAME (seed S)``): a case
per generated run (``run N``), a ``<failure>`` for a finding (its error, inputs and replay seed)
and ``<skipped>`` for a run the drawer could not make inputs for.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import json

from flows.testing.compare import Difference
from flows.testing.explore import Exploration
from flows.testing.runner import TestSession


def junit_xml(session: TestSession, exploration: Exploration | None = None) -> str:
    """The session (and the exploration after it, if any) as a JUnit XML document (``<testsuites>``)."""
    root = ET.Element("testsuites", name="ergon test")
    totals = {"tests": 0, "failures": 0, "errors": 0}
    for file in session.files:
        results = [r for r in session.results if r.file == file]
        problems = [d for d in session.problems if d.file == file]
        failures = sum(1 for r in results if not r.passed)
        suite = ET.SubElement(root, "testsuite", name=file, tests=str(len(results) + len(problems)),
                              failures=str(failures), errors=str(len(problems)), skipped="0",
                              time=f"{sum(r.seconds for r in results):.3f}")
        for d in problems:
            case = ET.SubElement(suite, "testcase", classname=Path(file).name, name=f"{d.file}:{d.line}:{d.col}", time="0")
            error = ET.SubElement(case, "error", message=d.message, type=d.code)
            error.text = d.format()
        for r in results:
            case = ET.SubElement(suite, "testcase", classname=r.definition, name=r.name, time=f"{r.seconds:.3f}")
            if not r.passed:
                failure = ET.SubElement(case, "failure", message=summary(r.differences), type="expectation")
                failure.text = "\n".join(f"{d.what}: expected {d.expected!r}, got {d.actual!r}" for d in r.differences)
        totals["tests"] += len(results) + len(problems)
        totals["failures"] += failures
        totals["errors"] += len(problems)
    if exploration is not None:
        tests, failures = _explored_suites(root, exploration)
        totals["tests"] += tests
        totals["failures"] += failures
    for key, value in totals.items():
        root.set(key, str(value))
    root.set("time", f"{session.seconds:.3f}")
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def _explored_suites(root: ET.Element, exploration: Exploration) -> tuple[int, int]:
    """A suite per explored definition under ``root``; the runs and the findings added."""
    tests = failures = 0
    for definition in sorted({r.definition for r in exploration.runs}):
        runs = [r for r in exploration.runs if r.definition == definition]
        found = [r for r in runs if r.finding]
        suite = ET.SubElement(root, "testsuite", name=f"explore: {definition} (seed {exploration.seed})",
                              tests=str(len(runs)), failures=str(len(found)), errors="0",
                              skipped=str(sum(1 for r in runs if r.skipped)), time="0")
        for r in runs:
            case = ET.SubElement(suite, "testcase", classname=definition, name=f"run {r.number}", time="0")
            if r.skipped:
                ET.SubElement(case, "skipped", message=r.skipped)
            elif r.finding:
                where = f" at `{r.node}`" if r.node else ""
                failure = ET.SubElement(case, "failure", message=f"ended {r.status} with a {r.error_kind} error{where}",
                                        type=r.error_kind or "finding")
                failure.text = f"error: {r.error}\ninputs: {json.dumps(r.inputs)}\nreplay: {r.seed}"
        tests += len(runs)
        failures += len(found)
    return tests, failures


def summary(found: list[Difference]) -> str:
    """``route, context.total differ``: what a failure's one-line message says."""
    names = [d.what for d in found]
    return ", ".join(names) + (" differs" if len(names) == 1 else " differ")
