"""The test-file format (``*.test.yaml``): what a test of a definition says, as frozen models.

A test file names the definition under test and lists cases; each case gives the run's inputs,
what stands in for tools, interactions and people (``mocks``), and what the run must end with
(``expect``)::

    definition: invoice_processing
    people: {maria: [finance], bob: [sales]}                   # optional: who is in which group
    cases:
      - name: a big invoice waits for finance
        inputs: {vendor_name: ACME, currency: EUR, invoice_lines: [...]}
        mocks:
          tools:
            fetch_exchange_rate: {returns: {fx_rate: 1.0}}   # or {raises: "rates down"},
                                                              # or a list: one per call, in order
          interactions:
            ClassifyLine: [{returns: {gl_code: "6200", category: hardware, amount: 18400}}]  # per call, in order
          tasks:
            finance_approval: {answer: {approval_decision: approve}, as: maria}   # or a list: one per visit
        expect:
          status: completed                                   # completed | failed | paused | cancelled
          outcome: posted
          route: [classify_lines, fetch_rate, compute_total]  # the nodes visited, in order
          context: {approval_decision: approve}               # a subset of the final context
          calls: {fetch_exchange_rate: 1}                     # tools and interactions, by name
          refused: []                                         # task nodes whose answerer was refused
        prefect: true                                         # optional: through the real Prefect flow

:func:`load_test_file` reads a file with the compiler's loader (positions kept, duplicate keys
refused) and returns the model or the diagnostics, each with its file, line and column — the
same shape ``ergon check`` prints for definitions. What the file names is checked against the
definitions folder by :mod:`flows.testing.checks`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from compiler import Diagnostic
from compiler.errors import format_path

# The compiler's translation of pydantic's errors into findings (unknown keys with did-you-mean
# hints, missing fields, wrong types): test files get the same messages as definitions.
from compiler.parse import _translate
from compiler.source import SourceMap, load_file

#: How test files are named; ``ergon test`` collects these.
SUFFIX = ".test.yaml"

Status = Literal["completed", "failed", "paused", "cancelled"]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)


class Result(_Model):
    """One result a stand-in gives: ``returns`` a value, or ``raises`` a failure with that message."""

    returns: Any = Field(None, description="The value the tool returns / the model answers.")
    raises: str | None = Field(None, description="Fail the call with this message instead.")

    @model_validator(mode="after")
    def _one_of(self) -> Result:
        given = {"returns", "raises"} & self.model_fields_set
        if len(given) != 1:
            raise ValueError("give exactly one of `returns` or `raises`")
        return self

    @property
    def fails(self) -> bool:
        return "raises" in self.model_fields_set


class TaskAnswer(_Model):
    """A person's answer to a human task of the node, given as the user ``as``."""

    answer: dict[str, Any] = Field(description="The task's fields, as a person would fill them in.")
    as_: str | None = Field(None, alias="as", description="Who answers (default: the task's assignee, or `tester`).")


class Mocks(_Model):
    """What stands in for tools, interactions and people in one case."""

    tools: dict[str, Result | list[Result]] = Field(
        default_factory=dict, description="By tool name: one result for every call, or a list used per call in order.")
    interactions: dict[str, Result | list[Result]] = Field(
        default_factory=dict, description="By interaction name: the structured answer(s), per call in order.")
    tasks: dict[str, TaskAnswer | list[TaskAnswer]] = Field(
        default_factory=dict, description="By human-task node id: one answer for every visit, or a list used per visit "
                                          "in order (a visit past its end is left unanswered: the case ends paused).")


class Expect(_Model):
    """What the case's run must end with; only what is given is compared."""

    status: Status | None = None
    outcome: str | None = None
    route: list[str] | None = Field(None, description="The top-level nodes visited, in order (final node included).")
    context: dict[str, Any] | None = Field(None, description="A subset of the final context.")
    calls: dict[str, int] | None = Field(None, description="How often each tool / interaction was called.")
    error: str | None = Field(None, description="Text the run's error contains.")
    refused: list[str] | None = Field(
        None, description="The human-task nodes whose answer was refused for who gave it, in order.")


#: Who belongs to which groups, by person: ``{maria: [legal], bob: [sales]}``.
People = dict[str, list[str]]


class Case(_Model):
    name: str
    people: People | None = Field(None, description="Who belongs to which groups in this case (replaces the file's).")
    inputs: dict[str, Any] = Field(default_factory=dict)
    mocks: Mocks = Field(default_factory=Mocks)
    expect: Expect = Field(default_factory=Expect)
    prefect: bool = Field(
        False, strict=True,
        description="Run the case through the real Prefect flow, as `ergon run` does (each visit a task run, a human "
                    "task's answer resuming the paused flow run), instead of in-process without Prefect.")


class TestFile(_Model):
    """A ``*.test.yaml`` file: the definition under test and its cases."""

    __test__ = False  # not a pytest class, whatever its name

    definition: str = Field(description="A definition name from the definitions folder, or a definition file's path.")
    people: People | None = Field(
        None, description="Who belongs to which groups; when given (here or in a case), a task's answer is refused to "
                          "a person outside its group. Without it, the person answering counts as a member.")
    cases: list[Case] = Field(min_length=1)

    def people_of(self, case: Case) -> People | None:
        """Who belongs to which groups in ``case``: its own ``people``, else the file's (None: not said)."""
        return case.people if case.people is not None else self.people


@dataclass
class LoadedTests:
    """One test file as loaded: the model (None when it has errors), its positions, its problems."""

    file: str
    spec: TestFile | None
    source: SourceMap
    data: Any = None
    diagnostics: list[Diagnostic] = field(default_factory=list)

    def at(self, path: tuple[str | int, ...], code: str, message: str, hint: str | None = None, *,
           key: bool = False) -> Diagnostic:
        """A diagnostic at ``path`` inside this file (``cases[0].expect.route[2]``)."""
        line, col = self.source.locate(path, key=key)
        return Diagnostic(code, message, self.file, line, col, format_path(path), hint)


def load_test_file(path: str | Path) -> LoadedTests:
    """Read and validate one test file; never raises on bad input."""
    doc = load_file(path)
    source = doc.source or SourceMap(str(path))
    loaded = LoadedTests(str(path), None, source, doc.data)
    for finding in doc.findings:
        loaded.diagnostics.append(loaded.at(finding.path, finding.code, finding.message, finding.hint))
    if doc.findings:
        return loaded
    if not isinstance(doc.data, dict):
        loaded.diagnostics.append(loaded.at((), "not-a-mapping", "a test file is a mapping with `definition` and `cases`",
                                            "start with `definition: NAME` and a `cases:` list"))
        return loaded
    try:
        loaded.spec = TestFile.model_validate(doc.data)
    except ValidationError as exc:
        findings = _translate(exc, TestFile, doc.data)
        paths = [f.path for f in findings]
        for finding in findings:
            # "one result, or a list of results": a list with a bad item is also "not a mapping";
            # the item's own problem is the one to read
            if finding.code == "wrong-type" and any(p[:len(finding.path)] == finding.path and p != finding.path
                                                    for p in paths):
                continue
            message = finding.message.replace("Value error, ", "")
            hint = finding.hint
            if hint is None and finding.code == "wrong-type" and finding.path[-1:] == ("prefect",):
                hint = "write `prefect: true` (through the real Prefect flow) or leave it out (in-process)"
            loaded.diagnostics.append(loaded.at(finding.path, finding.code, message, hint,
                                                key=finding.code == "unknown-key"))
    return loaded


def collect_files(paths: list[str | Path]) -> list[Path]:
    """The test files under ``paths`` (files as given, folders searched), sorted, each once."""
    found: dict[Path, None] = {}
    for target in map(Path, paths):
        if target.is_dir():
            for p in sorted(target.rglob(f"*{SUFFIX}")):
                if not any(part.startswith(".") for part in p.relative_to(target).parts):
                    found[p] = None
        else:
            found[target] = None
    return list(found)
