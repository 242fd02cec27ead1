"""Runtime tests use the `definitions` and `run_def` fixtures of tests/conftest.py.

At the end of the session, what the soundness properties saw is printed through the terminal
reporter, so CI logs show it: the coverage table of the shipped definitions (runs and routes per
definition, see soundness_report.py) and the counts of the generated folders (differential.py).
"""

from __future__ import annotations

import differential
import soundness_report


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    table = soundness_report.lines()
    if table:
        terminalreporter.write_sep("=", "soundness: runs and routes covered")
        for line in table:
            terminalreporter.write_line(line)
    counts = differential.GENERATED.lines()
    if counts:
        terminalreporter.write_sep("=", "soundness: generated definitions")
        for line in counts:
            terminalreporter.write_line(line)
