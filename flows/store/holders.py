"""Which other processes hold a database file's locks, to name them when the store is busy.

Best effort and Linux only (elsewhere, or without the rights to look, the answer is empty):

1. ``/proc/locks`` lists every POSIX lock with its process and the locked file's inode. SQLite
   takes a *write* lock on the database file (rollback journal, or WAL with exclusive locking
   mode) or on its ``-shm`` file (WAL: the writer's byte, a checkpoint, a recovery); the
   processes holding one of those are the ones in the way. Readers' shared locks and the
   waiting requests (``->`` lines) are not counted.
2. Failing that, ``/proc/<pid>/fd`` shows which processes have the file open: one of them holds
   the lock.
"""

from __future__ import annotations

import os
from pathlib import Path

#: A process's command line is shortened to this many characters in a message.
COMMAND_CHARS = 80


def _inodes(database: Path) -> set[int]:
    found = set()
    for suffix in ("", "-wal", "-shm"):
        try:
            found.add(os.stat(f"{database}{suffix}").st_ino)
        except OSError:
            continue
    return found


def _lockers(inodes: set[int]) -> list[int]:
    """Processes with a write lock on one of ``inodes`` (from ``/proc/locks``)."""
    try:
        lines = Path("/proc/locks").read_text().splitlines()
    except OSError:
        return []
    pids: list[int] = []
    for line in lines:
        fields = line.split()
        # "1: POSIX  ADVISORY  WRITE 4242 00:2f:1234 1073741824 1073741824"; "1: -> POSIX …" waits
        if len(fields) < 6 or fields[1] == "->" or fields[3] != "WRITE":
            continue
        try:
            pid, inode = int(fields[4]), int(fields[5].rsplit(":", 1)[-1])
        except ValueError:
            continue
        if inode in inodes and pid > 0 and pid != os.getpid() and pid not in pids:
            pids.append(pid)
    return pids


def _openers(database: Path) -> list[int]:
    """Processes that have the database file open (from ``/proc/<pid>/fd``)."""
    target = os.path.realpath(database)
    pids: list[int] = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for entry in entries:
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            fds = os.listdir(f"/proc/{entry}/fd")
        except OSError:
            continue  # gone, or not ours to look at
        for fd in fds:
            try:
                if os.readlink(f"/proc/{entry}/fd/{fd}") == target:
                    pids.append(int(entry))
                    break
            except OSError:
                continue
    return pids


def describe(pid: int) -> str:
    """``process 4242 (python3 worker.py)``: the id and the start of the command line."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return f"process {pid}"
    command = " ".join(raw.decode("utf-8", "replace").replace("\0", " ").split())  # one line
    if len(command) > COMMAND_CHARS:
        command = command[:COMMAND_CHARS - 1] + "…"
    return f"process {pid} ({command})" if command else f"process {pid}"


def holders(database: str | os.PathLike[str]) -> tuple[list[int], bool]:
    """(process ids, whether they are known to hold a write lock): the lockers of ``database``
    when ``/proc/locks`` shows them, else the processes that have it open; empty when neither
    can be told."""
    path = Path(database)
    lockers = _lockers(_inodes(path))
    if lockers:
        return lockers, True
    return _openers(path), False
