"""The store's write-ahead log is checkpointed by a thread of the process, not inside a commit."""

from __future__ import annotations

import os
import time

from flows.store import db, wal
from flows.store import runs as run_store


def _database_file(url: str) -> str:
    return url.removeprefix("sqlite:///")


def test_connections_leave_checkpoints_to_the_thread_but_keep_sqlites_own_as_a_safety_net(store):
    with db.get_engine().connect() as conn:
        assert conn.exec_driver_sql("PRAGMA wal_autocheckpoint").scalar() == wal.SAFETY_NET_PAGES
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"


def test_writes_reach_the_database_file_without_a_commit_checkpointing_them(store):
    """30 commits of 120 KB of runs stay in the log under SQLite's own threshold (1,000 pages
    of commits, ~4 MB); the thread moves them into the database file within a few of its looks."""
    path = _database_file(store)
    run_store.create_run("d")
    time.sleep(wal.EVERY_SECONDS * 3)  # the thread has seen the log once: the file as it is now
    before = os.path.getsize(path)
    for i in range(30):
        run_store.create_run("d", inputs={"text": f"{i}" + "x" * 4000})
    deadline = time.monotonic() + 20
    # the thread may look while the commits are still coming and move only the first ones: wait
    # for the whole batch's size, not for the first growth
    while os.path.getsize(path) <= before + 50_000 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert os.path.getsize(path) > before + 50_000
    assert run_store.list_runs(limit=1)[1] == 31  # nothing lost on the way


def test_no_checkpoint_opens_a_disposed_engines_database(store):
    """After ``dispose_all`` the thread leaves the database alone, even when its log changes: a
    checkpoint's connection recreates the ``-wal`` and ``-shm`` files, and whoever disposed the
    engines may be removing the database's folder (``ergon test``'s temporary store did, and its
    removal failed on a folder that was not empty)."""
    import sqlite3

    from sqlalchemy import event

    run_store.create_run("d")
    engine = db.get_engine()
    db.dispose_all()
    connects: list[object] = []
    event.listen(engine, "connect", lambda *_: connects.append(1))
    other = sqlite3.connect(_database_file(store))  # another process's writes, as SQLite sees them
    try:
        other.execute("PRAGMA wal_autocheckpoint=0")
        for i in range(5):
            other.execute("CREATE TABLE IF NOT EXISTS scratch (n INTEGER)")
            other.execute("INSERT INTO scratch VALUES (?)", (i,))
            other.commit()
            time.sleep(wal.EVERY_SECONDS)
        assert os.path.exists(_database_file(store) + "-wal")  # the log changed under the thread's eyes
        assert connects == []
    finally:
        other.close()
