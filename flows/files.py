"""Writing a file whole or not at all, and saying so in one sentence when the disk is full.

Ergon's own files (the secret key file, the signing keys, the documents of the document store)
are written through :func:`write_atomic`: the content goes to a temporary file in the same
folder, is flushed to the disk (``fsync``), then takes the file's name in one step
(``os.replace``, or ``os.link`` when an existing file must not be replaced), and the folder is
flushed too, so that the new name survives a power cut. A reader — or the next command after a
crash or a full disk — finds the old file, the new one, or none, never an empty or partial one;
the temporary file is removed when the write fails. Files that belong together (a document's
text and its metadata) are written by :func:`write_together`: all staged, then all renamed.

A full disk (``ENOSPC``, or ``EDQUOT`` for a quota) is raised as :class:`DiskFull`, an
:class:`~flows.errors.ErgonError` naming the file and what to do, which every command prints as
one line.
"""

from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path

from flows.errors import ErgonError

#: The errors that mean "no room left" (a full file system, or the user's quota reached).
NO_SPACE = (errno.ENOSPC, errno.EDQUOT)


class DiskFull(ErgonError, OSError):
    """A file cannot be written because its disk (or the user's quota there) is full."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = str(path)
        super().__init__(f"no space left on the disk of {self.path}: free space there, or set ERGON_HOME "
                         f"(and ERGON_DATABASE_URL, if set) to a folder on a disk with room, then try again")


def is_no_space(exc: BaseException) -> bool:
    """Whether ``exc`` says the disk or the quota is full."""
    return isinstance(exc, OSError) and exc.errno in NO_SPACE


def fsync_folder(folder: str | os.PathLike[str]) -> None:
    """Flush a folder's entries (a new or renamed file in it) to the disk; best effort where a
    folder cannot be opened for that (some file systems, other systems than POSIX ones)."""
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _link_new(tmp: str, target: Path) -> None:
    """Give ``tmp`` the name ``target`` unless that name exists (:class:`FileExistsError`)."""
    try:
        os.link(tmp, target)
    except FileExistsError:
        raise
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK):
            raise
        # a file system without hard links: check, then rename (a narrow race, nothing better)
        if target.exists():
            raise FileExistsError(errno.EEXIST, "file exists", str(target)) from None
        os.replace(tmp, target)


def _stage(target: Path, data: str | bytes, mode: int) -> str:
    """Write ``data`` to a new temporary file beside ``target``, flushed to the disk; its path.
    On failure nothing is left and a full disk is :class:`DiskFull` (naming ``target``)."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    try:
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    except OSError as exc:
        if is_no_space(exc):
            raise DiskFull(target) from exc
        raise
    try:
        try:
            os.fchmod(fd, mode)
            view = memoryview(raw)
            while view:  # os.write may write less than asked
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        if is_no_space(exc):
            raise DiskFull(target) from exc
        raise
    return tmp


def write_atomic(path: str | os.PathLike[str], data: str | bytes, *, mode: int = 0o600,
                 replace: bool = True) -> None:
    """Write ``data`` (text is UTF-8) to ``path`` whole or not at all (see the module docstring).

    The file gets ``mode`` from its creation on (the temporary file is made with it: a key is
    never readable by others, even briefly). ``replace=False`` leaves an existing file alone and
    raises :class:`FileExistsError` — two processes creating the same key file both end up using
    the first one written. A full disk raises :class:`DiskFull`; nothing is left behind.
    """
    target = Path(path)
    tmp = _stage(target, data, mode)
    try:
        if replace:
            os.replace(tmp, target)
        else:
            # link fails when the name exists: creation without a window where another
            # process's file could be overwritten
            _link_new(tmp, target)
    finally:
        Path(tmp).unlink(missing_ok=True)
    fsync_folder(target.parent)


def write_together(files: dict[Path, str | bytes], *, mode: int = 0o600) -> None:
    """Write several files of one folder (a document's text and its metadata) so that a failure
    changes none of them: every one is staged first — a full disk then leaves the old files as
    they were — and only then do they take their names (renames need no room)."""
    staged: dict[Path, str] = {}
    try:
        for target, data in files.items():
            staged[target] = _stage(target, data, mode)
        for target, tmp in staged.items():
            os.replace(tmp, target)
    finally:
        for tmp in staged.values():
            Path(tmp).unlink(missing_ok=True)
    for folder in {target.parent for target in files}:
        fsync_folder(folder)
