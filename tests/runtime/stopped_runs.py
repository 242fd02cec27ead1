"""What the tests of runs whose process stopped share: the CLI and a two-node definition."""

import sys

ERGON = [sys.executable, "-m", "flows.cli"]
TWO = """
format_version: 1
process: two_steps
initial: a
context: {schema: {type: object}}
nodes:
  a: {type: tool, tool: noop, transitions: [{to: done}]}
  done: {type: final}
"""
