"""SQLite's write-ahead log, checkpointed by a thread of its own instead of by a commit.

In WAL mode SQLite copies the log's pages into the database file (a checkpoint) inside whichever
commit takes the log past ``wal_autocheckpoint`` pages, and a checkpoint syncs both files to disk.
On the engine's path that commit is a visit's checkpoint, so every thousand pages or so one visit
waited for the disk while the run's event loop stood still. Measured on the chain benchmark
(200 no-op visits against a Prefect server on the same disk): Ergon's process lay idle ~0.2 s
longer than the hand-written flow's; with the store on tmpfs, or with no automatic checkpoints,
the difference was gone.

So every connection of an Ergon process raises ``wal_autocheckpoint`` to a safety net
(:data:`SAFETY_NET_PAGES`, which only matters should the thread below not run), and one daemon
thread of the process looks at the logs every :data:`EVERY_SECONDS` and, when one changed,
runs ``PRAGMA wal_checkpoint(PASSIVE)``: a passive checkpoint never waits for or blocks a reader
or a writer, and the sqlite3 module releases the GIL while it runs. Any process may checkpoint
what another wrote; SQLite lets one checkpoint run at a time.

:func:`forget_all` (the store's ``dispose_all``) stops the watching and returns only when no
checkpoint is running: a checkpoint opens a connection, which recreates the ``-wal`` and ``-shm``
files, and a caller that disposes the engines before removing the database's folder (``ergon
test``'s temporary store) must not see them appear while it removes it.
"""

from __future__ import annotations

import os
import threading
import time

from sqlalchemy.engine import Engine

#: ``wal_autocheckpoint`` of every connection: SQLite's own checkpoint, kept as a safety net (40 MB)
SAFETY_NET_PAGES = 10_000
#: how often the checkpointer looks at the log
EVERY_SECONDS = 0.5

#: log file → (the engine of its database, the log's (size, mtime) when last checkpointed)
_watched: dict[str, tuple[Engine, tuple[int, int] | None]] = {}
_lock = threading.Lock()
_thread: threading.Thread | None = None


def watch(engine: Engine) -> None:
    """Checkpoint the log of ``engine``'s database file from now on (one thread per process
    watches every file; a file whose database is gone is forgotten)."""
    global _thread
    database = engine.url.database
    if not database or database == ":memory:":
        return
    with _lock:
        _watched[f"{database}-wal"] = (engine, None)
        if _thread is None or not _thread.is_alive():  # not yet, or a forked child (threads do not fork)
            _thread = threading.Thread(target=_checkpoint_when_changed, name="ergon-wal-checkpointer", daemon=True)
            _thread.start()


def forget_all() -> None:
    """Watch no file any more; when this returns, no checkpoint is running (see the module docstring)."""
    with _lock:
        _watched.clear()


def checkpoint(engine: Engine) -> tuple[int, int, int] | None:
    """One passive checkpoint: SQLite's (busy, frames in the log, frames checkpointed), or None
    when it could not run (the database is gone, a transient error)."""
    try:
        conn = engine.raw_connection()
    except Exception:  # noqa: BLE001 - the next look tries again
        return None
    try:
        cursor = conn.cursor()
        row = cursor.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        cursor.close()
        return (int(row[0]), int(row[1]), int(row[2])) if row else None
    except Exception:  # noqa: BLE001 - likewise
        return None
    finally:
        conn.close()


def _checkpoint_when_changed() -> None:
    while True:
        time.sleep(EVERY_SECONDS)
        with _lock:
            watched = list(_watched.items())
        for wal_path, (engine, seen) in watched:
            try:
                stat = os.stat(wal_path)
            except OSError:  # no log right now (the last connection closed it); or no database
                if not os.path.exists(wal_path.removesuffix("-wal")):
                    with _lock:
                        _watched.pop(wal_path, None)
                continue
            now = (stat.st_size, stat.st_mtime_ns)
            if now == seen:
                continue
            with _lock:  # held through the checkpoint: forget_all waits for it
                if _watched.get(wal_path, (None,))[0] is not engine:  # forgotten (or replaced) since
                    continue
                checkpoint(engine)
                _watched[wal_path] = (engine, now)
