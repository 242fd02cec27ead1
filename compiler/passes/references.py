"""(being written) The `references` pass."""

from __future__ import annotations


def check(unit, ws):
    return ()
