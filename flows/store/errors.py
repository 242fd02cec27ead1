"""The errors the store raises: requests it refuses, which a caller can act on.

:class:`StoreError` is an :class:`flows.errors.ErgonError`, so the CLI reports it like any other
refusal; the subclasses also derive from the builtin a caller would expect (``LookupError`` for
an unknown id, ``ValueError`` for an impossible status change).
"""

from __future__ import annotations

from flows.errors import ErgonError


class StoreError(ErgonError):
    """A request the store refuses (unknown id, impossible state change, bad value)."""


class NotFound(StoreError, LookupError):
    pass


class InvalidTransition(StoreError, ValueError):
    pass


class TaskConflict(StoreError):
    """A human task is no longer in a state that allows the action (taken, answered, closed)."""
