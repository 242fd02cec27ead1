"""(being written) The `definite_assignment` pass."""

from __future__ import annotations


def check(unit, ws):
    return ()
