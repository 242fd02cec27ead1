"""The results of ``ergon test`` as JUnit XML, the report format CI systems read.

One ``<testsuite>`` per test file (its path as the name), one ``<testcase>`` per case run
(``classname`` the definition, ``name`` the case, ``time`` in seconds), a ``<failure>`` in a case
that failed with its differences as text, and an ``<error>`` case for each problem of a test
file that kept it from running — so a CI page shows a broken test file, not an empty suite.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from flows.testing.compare import Difference
from flows.testing.runner import TestSession


def junit_xml(session: TestSession) -> str:
    """The session as a JUnit XML document (``<testsuites>``)."""
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
    for key, value in totals.items():
        root.set(key, str(value))
    root.set("time", f"{session.seconds:.3f}")
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def summary(found: list[Difference]) -> str:
    """``route, context.total differ``: what a failure's one-line message says."""
    names = [d.what for d in found]
    return ", ".join(names) + (" differs" if len(names) == 1 else " differ")
