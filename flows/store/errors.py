"""The errors the store raises: requests it refuses, which a caller can act on.

:class:`StoreError` is an :class:`flows.errors.ErgonError`, so the CLI reports it like any other
refusal; the subclasses also derive from the builtin a caller would expect (``LookupError`` for
an unknown id, ``ValueError`` for an impossible status change).

:class:`StoreUnavailable` and its subclasses are the other kind: the database itself cannot be
used (a full disk, a damaged file, a lock held too long); :mod:`flows.store.faults` makes them
from the driver's errors, with a message that names the database and what to do.
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


class StoreUnavailable(StoreError):
    """The store's database cannot be used as it is — its disk is full, its file is damaged, another
    process holds its lock, or it cannot be opened — whatever the request. The message names the
    database and what to do (see :mod:`flows.store.faults`); ``where`` is the database's file (or
    its URL without the password)."""

    def __init__(self, message: str, where: str) -> None:
        super().__init__(message)
        self.where = where


class StoreFull(StoreUnavailable):
    """The disk (or quota) the store's file is on is full: nothing more can be written."""


class StoreCorrupt(StoreUnavailable):
    """The store's file is damaged or is not a database at all."""


class StoreBusy(StoreUnavailable):
    """Another process held the store's lock for longer than Ergon waits for it."""


class StoreInaccessible(StoreUnavailable):
    """The store's file cannot be opened, read or written (a missing folder, permissions, an I/O error)."""


class TooLarge(StoreError, ValueError):
    """A value larger than the store keeps for its kind (a secret's sealed value)."""
