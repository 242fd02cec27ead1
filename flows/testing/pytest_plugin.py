"""The pytest plugin: ``pytest`` in a project collects its ``*.test.yaml`` files, a case an item.

Installed with Ergon as the ``ergon`` entry point of the ``pytest11`` group, so a project's own
``pytest`` run picks up the definitions' tests beside its Python tests: each case of each
``*.test.yaml`` file pytest's collection reaches (its ``testpaths``, or the paths given) is an
item named after the case, which passes or fails with the same readable differences ``ergon
test`` prints. ``pytest -p no:ergon`` turns the plugin off.

A file is checked and run the first time one of its items runs, through
:func:`flows.testing.runner.run_tests` — the same checks, engine, store and stand-ins as ``ergon
test`` — and the results serve all of its items. A file with problems (an unknown node, a mock
that does not fit) fails every item of it with the diagnostics at their ``file:line:col``; a
file that does not load at all is one failing item. The definitions are read from where ``ergon
test`` reads them: ``ERGON_DEFINITIONS``, else ``definitions/`` of the working folder.

Only pytest is imported when pytest loads the plugin; Ergon's modules are imported when a test
file is collected, so a pytest run without test files pays nothing for it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

SUFFIX = ".test.yaml"  # what flows.testing.spec.SUFFIX says; not imported, to keep pytest's start light


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if file_path.name.endswith(SUFFIX):
        return DefinitionTestFile.from_parent(parent, path=file_path)
    return None


class DefinitionTestFile(pytest.File):
    """One ``*.test.yaml`` file: its cases as items, run together the first time one is."""

    _session: Any = None

    def collect(self) -> Any:
        from flows.testing.spec import load_test_file

        loaded = load_test_file(self.path)
        if loaded.spec is None:  # does not load: one item that fails with the file's problems
            yield CaseItem.from_parent(self, name=self.path.name, index=None)
            return
        for index, case in enumerate(loaded.spec.cases):
            yield CaseItem.from_parent(self, name=case.name, index=index)

    def results(self) -> Any:
        """The file checked and run (once): the runner's session."""
        if self._session is None:
            from flows.testing.runner import run_tests

            self._session = run_tests([self.path])
        return self._session


class CaseFailed(Exception):
    """A case's run differed from what it expected, or its file has problems: the lines to show."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__("\n".join(lines))
        self.lines = lines


class CaseItem(pytest.Item):
    """One case of a test file."""

    def __init__(self, *, index: int | None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.index = index

    def runtest(self) -> None:
        assert isinstance(self.parent, DefinitionTestFile)
        session = self.parent.results()
        if session.problems:
            raise CaseFailed(["the test file has problems (`ergon check` lists them too):",
                              *(d.format() for d in session.problems)])
        result = session.results[self.index] if self.index is not None and self.index < len(session.results) else None
        if result is None:
            raise CaseFailed([f"the case `{self.name}` did not run"])
        if not result.passed:
            from flows.testing.compare import difference_lines

            raise CaseFailed([f"{result.definition} › {result.name}", *difference_lines(result)])

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, CaseFailed):
            return "\n".join(excinfo.value.lines)
        return str(super().repr_failure(excinfo, style=style))

    def reportinfo(self) -> tuple[Path, int | None, str]:
        # the case's name as the domain: pytest shows the node id (file::case) with it
        return self.path, None, self.name
