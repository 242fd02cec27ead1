"""(being written) The `lowered_kinds` pass."""

from __future__ import annotations


def check(unit, ws):
    return ()
