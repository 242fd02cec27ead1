"""Runtime tests use the `definitions` and `run_def` fixtures of tests/conftest.py.

At the end of the session, the soundness property test's coverage table (runs and routes per
definition, see soundness_report.py) is printed through the terminal reporter, so CI logs show it.
"""

from __future__ import annotations

import soundness_report


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    table = soundness_report.lines()
    if table:
        terminalreporter.write_sep("=", "soundness: runs and routes covered")
        for line in table:
            terminalreporter.write_line(line)
