"""The check cache: `ergon check` of unchanged input prints its stored result without importing the compiler.

`ergon check` runs in editors and CI on every save, and nearly all of its time is importing the
compiler (pydantic's IR models, jsonschema, Jinja2, YAML: 0.4–0.5 s on this 2-core machine). Like
ruff's and mypy's caches, this one answers a check of input seen before from disk: the exit status
and the exact text the check wrote to standard output and standard error, in the order written.

An entry is keyed by a BLAKE2b hash of everything the check's result can depend on (:func:`_material`):

* every regular file under the folders the check reads — each folder argument, the folder of each
  file argument (its definitions and ``tools/``), ``tools/`` beside a skill's folder, and
  ``definitions/`` — recursively, each by path, size, mtime and a hash of its content (folders
  named ``.*`` and ``__pycache__`` are left out: the compiler reads none of their files);
* the arguments, the current folder, the environment variables that can change a check or how
  it prints (``ERGON_*``, ``PYTHON*``, locale, and those rich and :mod:`flows.cli.terminal` read
  for colour and width), which standard streams are terminals, the terminal's width and the
  streams' encodings;
* Ergon's own code (path, size and mtime of every file of ``compiler/`` and ``flows/``), the
  installed packages (the names of the site-packages folders' entries, versions included), the
  Python interpreter and its version.

A lookup hashes with the standard library only. A check is stored only when its input was the
same after it as before (a file saved during the check is not cached), it ended with 0 or 1 and
no exception, and the JavaScript sandbox neither hit a limit nor lost its process (which depends
on the machine's load, not the input). Whatever goes wrong computing the key — an unreadable file,
too many files (:data:`MAX_FILES`, :data:`MAX_BYTES`) — means a normal check; an entry that cannot
be read or is malformed is a miss. Entries live in ``<state folder>/cache/check/`` (``.ergon/`` unless
``ERGON_HOME`` says otherwise), written atomically; the :data:`MAX_ENTRIES` most recently used are
kept. Only the `ergon` command's process uses the cache (not a test calling the CLI in-process),
and only in a project's root folder or with ``ERGON_HOME`` set, so no state folder is made in a
folder that is no project. ``--no-cache`` or ``ERGON_NO_CHECK_CACHE=1`` turns it off.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

try:  # CPython's own BLAKE2: `hashlib` would load OpenSSL first, a few ms of a 0.05 s command
    from _blake2 import blake2b
except ImportError:  # another interpreter
    from hashlib import blake2b

#: The entries' format; a change of it (or of what the key covers) makes every entry a miss.
FORMAT = 1
#: How many entries are kept (the most recently used).
MAX_ENTRIES = 64
#: Beyond this many files, or bytes of them, under the folders a check reads, nothing is cached:
#: hashing them all would cost what the check saves (a definitions folder holds tens of files).
MAX_FILES = 5_000
MAX_BYTES = 64 * 2**20
#: ``ERGON_NO_CHECK_CACHE=1`` (or any value but ``0`` and empty) turns the cache off.
OFF_VARIABLE = "ERGON_NO_CHECK_CACHE"
#: Texts of what the JavaScript sandbox (:mod:`compiler.js.engine`) says when it hit a limit or its
#: process did not answer in time: that depends on the machine's load, not the input, so such a
#: result is not stored.
_LIMIT_TEXTS = ("than its time limit", "exhausted the sandbox's memory", "JavaScript analysis failed",
                "JavaScript sandbox did not start")
#: Environment variables, besides the prefixes below, that change a check or how it is printed:
#: the locale, and those rich (and :mod:`flows.cli.terminal`, which answers as rich) read.
_VARIABLES = frozenset({"LANG", "LANGUAGE", "TERM", "COLORTERM", "COLUMNS", "LINES", "NO_COLOR", "FORCE_COLOR",
                        "TTY_COMPATIBLE", "TTY_INTERACTIVE", "JUPYTER_COLUMNS", "JUPYTER_LINES", "CLICOLOR",
                        "CLICOLOR_FORCE", "TERM_PROGRAM"})
_PREFIXES = ("ERGON_", "PYTHON", "LC_")
#: Folders the walks leave out besides those named ``.*`` (the state folder, version control,
#: virtualenvs): no check reads the bytecode caches.
_SKIPPED = ("__pycache__",)


class _TooMuch(Exception):
    """More files under the checked folders than are worth hashing."""


def _off() -> bool:
    return os.environ.get(OFF_VARIABLE, "") not in ("", "0")


def cache_folder() -> Path | None:
    """Where the entries live, or None when this process does not use the cache."""
    from flows import heap
    from flows.settings import ergon_home_path, project_root

    if _off() or not heap.one_run_process():
        return None
    if not os.environ.get("ERGON_HOME") and project_root(Path.cwd()) != Path.cwd():
        return None  # no project here: make no state folder
    return ergon_home_path() / "cache" / "check"


class _Hasher:
    """The files under some folders, each by path, size, mtime and content, within the limits."""

    def __init__(self, skip: Path) -> None:
        self.skip = str(skip)
        self.files = 0
        self.bytes = 0

    def folder(self, root: str) -> list[Any]:
        out: list[Any] = []
        seen: set[tuple[int, int]] = set()
        stack = [root]
        while stack:
            folder = stack.pop()
            st = os.stat(folder)
            if (st.st_dev, st.st_ino) in seen:  # a symbolic link back up the tree
                continue
            seen.add((st.st_dev, st.st_ino))
            with os.scandir(folder) as entries:
                for entry in entries:
                    if entry.is_dir():  # follows links, as the compiler's reads do
                        if entry.name.startswith(".") or entry.name in _SKIPPED:
                            continue
                        if os.path.realpath(entry.path) == self.skip:
                            continue
                        stack.append(entry.path)
                    elif entry.is_file():
                        out.append(self.file(entry.path))
                    else:  # a dangling link, a socket: its name is what can matter
                        out.append([entry.path, "other"])
        out.sort()
        return out

    def file(self, path: str) -> list[Any]:
        st = os.stat(path)
        self.files += 1
        self.bytes += st.st_size
        if self.files > MAX_FILES or self.bytes > MAX_BYTES:
            raise _TooMuch
        with open(path, "rb") as f:
            digest = blake2b(f.read(), digest_size=20).hexdigest()
        return [path, st.st_size, st.st_mtime_ns, digest]


def _roots(targets: tuple[str, ...], definitions: str) -> list[str] | None:
    """The folders whose files the check of ``targets`` can read, or None when a target is missing
    (that check prints an error, not worth storing)."""
    roots: list[str] = []
    for target in targets:
        if os.path.isdir(target):
            roots.append(target)
        elif os.path.isfile(target):
            parent = os.path.dirname(target) or "."
            roots.append(parent)  # its definitions give the file context, its tools/ tools
            if target.endswith(".md"):  # a skill: its definitions folder's tools/
                roots.append(os.path.join(os.path.dirname(parent) or ".", "tools"))
        else:
            return None
    if os.path.isdir(definitions):
        roots.append(definitions)
    return roots


def _code_folders() -> list[str]:
    """Ergon's own packages beside this module: ``flows`` (this one's parent) and ``compiler``."""
    flows = Path(__file__).resolve().parents[1]
    return [str(flows), str(flows.parent / "compiler")]


def _code(folder: str) -> list[Any]:
    """Path, size and mtime of each file of one of Ergon's packages (a new install changes them)."""
    out: list[Any] = []
    stack = [folder]
    while stack:
        with os.scandir(stack.pop()) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name not in _SKIPPED:
                        stack.append(entry.path)
                else:
                    st = entry.stat()
                    out.append([entry.path, st.st_size, st.st_mtime_ns])
    out.sort()
    return out


def _installed() -> list[Any]:
    """The entries of the site-packages folders: every distribution's ``NAME-VERSION.dist-info``."""
    return [[p, sorted(os.listdir(p))] for p in sys.path if p.endswith("-packages") and os.path.isdir(p)]


def _terminal() -> list[Any]:
    """What decides colour and layout: which streams are terminals, the width, the encodings."""
    from flows.cli.terminal import width

    ttys: list[bool | None] = []
    for fd in (0, 1, 2):
        try:
            ttys.append(os.isatty(fd))
        except OSError:
            ttys.append(None)
    return [ttys, width(), [getattr(s, "encoding", None) for s in (sys.stdout, sys.stderr)],
            [getattr(s, "errors", None) for s in (sys.stdout, sys.stderr)]]


def _material(targets: tuple[str, ...], json_: bool, definitions: str, folder: Path) -> list[Any] | None:
    """Everything the check's printed result can depend on, as JSON-able data (see the module
    docstring), or None when it is not worth caching."""
    roots = _roots(targets, definitions)
    if roots is None:
        return None
    hasher = _Hasher(skip=folder.parent.parent.resolve())  # the state folder, wherever ERGON_HOME puts it
    files = {}
    for root in dict.fromkeys(roots):
        if os.path.isdir(root):
            files[root] = hasher.folder(root)
    env = sorted((k, v) for k, v in os.environ.items() if k in _VARIABLES or k.startswith(_PREFIXES))
    return [FORMAT, list(targets), json_, os.getcwd(), env, _terminal(),
            [sys.version, sys.executable, sys.prefix, list(sys.flags), sys.platform],
            [_code(f) for f in _code_folders() if os.path.isdir(f)], _installed(), files]


def _key(targets: tuple[str, ...], json_: bool, definitions: str, folder: Path) -> str | None:
    try:
        material = _material(targets, json_, definitions, folder)
    except (OSError, ValueError, _TooMuch):  # unreadable, vanished during the walk, too many files
        return None
    if material is None:
        return None
    return blake2b(json.dumps(material, ensure_ascii=True).encode(), digest_size=32).hexdigest()


class Cache:
    """The cache for one check: :meth:`replay` a stored result, else :meth:`record` the check."""

    def __init__(self, folder: Path, key: str, targets: tuple[str, ...], json_: bool, definitions: str) -> None:
        self.folder, self.key = folder, key
        self._again = lambda: _key(targets, json_, definitions, folder)

    @property
    def entry(self) -> Path:
        return self.folder / f"{self.key}.json"

    def stored(self) -> tuple[int, list[tuple[str, str]]] | None:
        """(exit status, output chunks) of this key's entry, or None when there is none or it is unusable."""
        try:
            data = json.loads(self.entry.read_bytes())
        except (OSError, ValueError, RecursionError):  # missing, cut short, not JSON, nested absurdly
            return None
        if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("key") != self.key:
            return None
        status, output = data.get("status"), data.get("output")
        if status not in (0, 1) or not isinstance(output, list):
            return None
        chunks = []
        for chunk in output:
            if not (isinstance(chunk, list) and len(chunk) == 2 and chunk[0] in ("out", "err")
                    and isinstance(chunk[1], str)):
                return None
            chunks.append((chunk[0], chunk[1]))
        return status, chunks

    def replay(self) -> int | None:
        """Print the stored result and return its exit status, or None on a miss."""
        found = self.stored()
        if found is None:
            return None
        status, chunks = found
        previous = None
        for name, text in chunks:
            stream = sys.stdout if name == "out" else sys.stderr
            if previous is not None and previous is not stream:
                previous.flush()  # each stream's text reaches a shared terminal in the order written
            stream.write(text)
            previous = stream
        sys.stdout.flush()
        sys.stderr.flush()
        try:
            os.utime(self.entry)  # recently used: kept when older entries are dropped
        except OSError:
            pass
        return status

    def record(self, check: Callable[[], int]) -> int:
        """Run ``check`` (printing as it does) and store its result when it may be replayed."""
        chunks: list[tuple[str, str]] = []
        out, err = sys.stdout, sys.stderr
        sys.stdout, sys.stderr = _Tee(out, "out", chunks), _Tee(err, "err", chunks)
        try:
            status = check()
        finally:
            sys.stdout, sys.stderr = out, err
        text = "".join(t for _, t in chunks)
        if status in (0, 1) and not any(limit in text for limit in _LIMIT_TEXTS) and not _sandbox_lost() \
                and self._unchanged():
            self._store(status, chunks)
        return status

    def _unchanged(self) -> bool:
        """Whether the input is still what the key was computed from (no file saved during the check)."""
        try:
            return self._again() == self.key
        except Exception:  # noqa: BLE001 - not knowing means not storing
            return False

    def _store(self, status: int, chunks: list[tuple[str, str]]) -> None:
        """Write the entry atomically (a reader sees the old one or the new one), then drop the
        least recently used beyond :data:`MAX_ENTRIES`. A failure to write only costs the next check time."""
        from flows.settings import private_dir

        data = {"format": FORMAT, "key": self.key, "status": status, "output": [list(c) for c in chunks]}
        tmp = self.folder / f".{self.key}.{os.getpid()}.tmp"
        try:
            private_dir(self.folder)
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(data, f)
            os.replace(tmp, self.entry)
            self._prune()
        except OSError:
            try:
                tmp.unlink(missing_ok=True)
            except OSError:
                pass

    def _prune(self) -> None:
        entries = []
        with os.scandir(self.folder) as found:
            for e in found:
                if e.name.endswith(".json") and e.is_file(follow_symlinks=False):
                    try:
                        entries.append((e.stat().st_mtime_ns, e.path))
                    except OSError:
                        continue
        for _, path in sorted(entries, reverse=True)[MAX_ENTRIES:]:
            try:
                os.unlink(path)
            except OSError:
                pass


def _sandbox_lost() -> bool:
    """Whether the JavaScript sandbox's process was lost during the check (it overran its start
    limit or died: the engine drops it) — a pass may have taken the failure as a template's."""
    engine = sys.modules.get("compiler.js.engine")
    worker = getattr(engine, "_worker", None)
    return worker is not None and getattr(worker, "next_id", 0) > 0 and getattr(worker, "proc", None) is None


class _Tee:
    """A standard stream that also keeps what is written to it, in order, named ``out`` or ``err``;
    everything else (``isatty``, ``fileno``, ``encoding`` — what decides colour) is the stream's."""

    def __init__(self, stream: Any, name: str, chunks: list[tuple[str, str]]) -> None:
        self._stream, self._name, self._chunks = stream, name, chunks

    def write(self, text: str) -> int:
        written = self._stream.write(text)
        self._chunks.append((self._name, text))
        return written

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def for_check(targets: tuple[str, ...], json_: bool, definitions: str) -> Cache | None:
    """The cache for checking ``targets`` (with ``json_``), or None when it is not used: turned
    off, not the `ergon` command, no project here, or the key could not be computed."""
    try:
        folder = cache_folder()
        if folder is None or sys.stdout is None or sys.stderr is None:
            return None
        key = _key(targets, json_, definitions, folder)
    except Exception:  # noqa: BLE001 - whatever fails here, the check itself runs as without a cache
        return None
    return None if key is None else Cache(folder, key, targets, json_, definitions)
