"""(being written) The `templates` pass."""

from __future__ import annotations


def check(unit, ws):
    return ()
