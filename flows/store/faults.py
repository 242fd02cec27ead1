"""The database's own faults, said in one sentence: a full disk, a damaged file, a lock held too long.

The driver reports these as errors of the statement that met them (``sqlite3.OperationalError:
database or disk is full``), which would print a traceback that names neither the file nor what
to do. :func:`fault_of` recognises them — by SQLite's result code where the driver gives it,
else by the message — anywhere in an exception's chain, and returns the
:class:`~flows.store.errors.StoreUnavailable` to raise instead (:mod:`flows.store.db` does, around
every transaction; the CLI does for anything that escaped):

=============================== ================================= =====================================
SQLite says                     raised as                         the sentence says
=============================== ================================= =====================================
``SQLITE_FULL``, or an I/O      :class:`StoreFull`                free space, or move ERGON_HOME /
error on a disk with no room                                      ERGON_DATABASE_URL to a disk with room
``SQLITE_CORRUPT``,             :class:`StoreCorrupt`             restore a copy, or recover the
``SQLITE_NOTADB``                                                 readable part (SQLite's ``.recover``)
``SQLITE_BUSY``, ``_LOCKED``    :class:`StoreBusy`                which process holds it (Linux,
                                                                  :mod:`flows.store.holders`), what to do
``SQLITE_CANTOPEN``, ``_PERM``, :class:`StoreInaccessible`        check the folder, rights, the disk
``_READONLY``, ``_IOERR``
=============================== ================================= =====================================

A PostgreSQL server that is out of disk (SQLSTATE ``53100``) is a :class:`StoreFull` too.
Anything else is not a fault of the database and is left alone (None).
"""

from __future__ import annotations

import errno
import os
import sqlite3

import sqlalchemy as sa

from flows.store.errors import StoreBusy, StoreCorrupt, StoreFull, StoreInaccessible, StoreUnavailable

# SQLite's primary result codes (the low byte of an extended code)
_BUSY, _LOCKED, _READONLY, _IOERR, _CORRUPT, _FULL, _CANTOPEN, _PERM, _NOTADB = 5, 6, 8, 10, 11, 13, 14, 3, 26
#: where the driver gives no code: the start of SQLite's message for each code
_MESSAGES = {
    "database or disk is full": _FULL,
    "database disk image is malformed": _CORRUPT,
    "file is not a database": _NOTADB,
    "database is locked": _BUSY,
    "database table is locked": _LOCKED,
    "disk i/o error": _IOERR,
    "unable to open database file": _CANTOPEN,
    "attempt to write a readonly database": _READONLY,
}
_PG_DISK_FULL = "53100"


def _code(exc: BaseException) -> int | str | None:
    """SQLite's primary result code of ``exc`` (or PostgreSQL's disk-full SQLSTATE), if it is one."""
    if isinstance(exc, sqlite3.Error):
        code = getattr(exc, "sqlite_errorcode", None)  # Python 3.11+
        if isinstance(code, int):
            return code & 0xFF
        text = str(exc).lower()
        return next((c for start, c in _MESSAGES.items() if text.startswith(start)), None)
    if getattr(exc, "sqlstate", None) == _PG_DISK_FULL:  # psycopg's DiskFull
        return _PG_DISK_FULL
    return None


def _no_room(database: str | None) -> bool:
    """Whether the disk of ``database`` has no room left for an ordinary user."""
    if not database:
        return False
    try:
        stats = os.statvfs(os.path.dirname(os.path.abspath(database)) or ".")
    except (OSError, AttributeError):
        return False
    return stats.f_bavail * stats.f_frsize < 64 * 1024  # less than a few pages: SQLite cannot grow


def _where(url: sa.URL) -> tuple[str, str | None]:
    """(what to call the database in a sentence, its file for SQLite)."""
    if url.get_backend_name() == "sqlite" and url.database and url.database != ":memory:":
        return os.path.abspath(url.database), os.path.abspath(url.database)
    return url.render_as_string(hide_password=True), None


def _busy_sentence(where: str, database: str | None, waited_s: float) -> str:
    from flows.store import holders

    pids, locking = holders.holders(database) if database else ([], False)
    if pids and locking:
        who = ", ".join(holders.describe(p) for p in pids[:3]) + " holds its lock"
    elif pids:
        who = "one of the processes that have it open — " + ", ".join(holders.describe(p) for p in pids[:3]) \
              + " — holds its lock"
    else:
        who = "another process holds its lock"
    return (f"the store {where} is busy: {who} and did not let go within {waited_s:g} s; wait for that process "
            f"to finish (or stop it if it hangs) and try again")


def fault_of(exc: BaseException, url: str | sa.URL, *, waited_s: float) -> StoreUnavailable | None:
    """The :class:`StoreUnavailable` that ``exc`` (or an error in its chain) means for the
    database at ``url``, or None when it is no fault of the database. ``waited_s`` is the busy
    timeout (for the sentence about a held lock)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    code: int | str | None = None
    detail = ""
    while current is not None and id(current) not in seen:
        if isinstance(current, StoreUnavailable):
            return current
        seen.add(id(current))
        driver = current.orig if isinstance(current, sa.exc.DBAPIError) else current
        if driver is not None and (code := _code(driver)) is not None:
            detail = " ".join(str(driver).split())[:120]
            break
        current = current.__cause__ or current.__context__
    if code is None:
        return None
    where, database = _where(sa.make_url(url))
    if code == _IOERR and _no_room(database):
        code = _FULL  # SQLite says "disk I/O error" when it cannot grow its shared-memory file
    if code in (_FULL, _PG_DISK_FULL):
        return StoreFull(f"the store {where} cannot be written: its disk is full; free space there, or "
                         f"set ERGON_HOME (or ERGON_DATABASE_URL) to a disk with room, then try again — the change "
                         f"was not written", where)
    if code in (_CORRUPT, _NOTADB):
        return StoreCorrupt(f"the store {where} is damaged ({detail}): put back a copy of that file from a backup, "
                            f"or copy what is still readable into a new file with SQLite's own tool (`sqlite3 {where} "
                            f".recover | sqlite3 recovered.db`) and point ERGON_DATABASE_URL at that file; "
                            f"`ergon runs export RUN_ID` may still read single runs", where)
    if code in (_BUSY, _LOCKED):
        return StoreBusy(_busy_sentence(where, database, waited_s), where)
    if code in (_CANTOPEN, _PERM, _READONLY, _IOERR):
        return StoreInaccessible(f"the store {where} cannot be used ({detail}): check that its folder exists, that "
                                 f"this user may read and write it, and the disk itself", where)
    return None


def cannot_create(database: str, exc: OSError) -> StoreUnavailable:
    """The error for a store file that cannot be created (``exc`` from creating it)."""
    where = os.path.abspath(database)
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return StoreFull(f"the store {where} cannot be created: its disk is full; free space there, or set "
                         f"ERGON_HOME (or ERGON_DATABASE_URL) to a disk with room, then try again", where)
    return StoreInaccessible(f"the store {where} cannot be created ({exc.strerror or exc}): check that its folder "
                             f"exists and that this user may write there", where)
