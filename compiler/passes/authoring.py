"""(being written) The `authoring` pass."""

from __future__ import annotations


def check(unit, ws):
    return ()
