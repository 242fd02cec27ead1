"""Engines, sessions and schema set-up for the Ergon store.

The database is chosen by ``ERGON_DATABASE_URL``; without it the store is a SQLite file
``<ERGON_HOME>/ergon.db`` (``ERGON_HOME`` defaults to ``./.ergon``). PostgreSQL URLs must name
the driver explicitly (``postgresql+psycopg://…``): SQLAlchemy 2.0 would otherwise pick psycopg2.

SQLite is used by several processes at once (the flow, its workers, the dashboard, the CLI), so
every connection gets WAL (readers never block the writer), a 30 s busy timeout, ``synchronous
NORMAL`` (safe with WAL, much faster than FULL) and foreign keys; the log is checkpointed by a
thread of the process, off the commits (:mod:`flows.store.wal`). Write transactions start with
``BEGIN IMMEDIATE``: a deferred transaction that reads and then writes can fail at once with
"database is locked" when another writer committed in between, because SQLite cannot wait for a
snapshot that is already stale. Taking the write lock up front lets the busy timeout do its job.

**Deferred writes.** A module may defer rows to the next transaction of this process
(:func:`defer_writes`; the engine's visit rows, :mod:`flows.store.visits`): every transaction on
the default database first writes them — a write transaction inside itself, before anything
else, a read transaction in a write transaction of its own just before — so nothing this process
reads or writes can miss or precede them. When a transaction that carried them ends, their
module hears whether it committed (``ended``): rolled back, the rows are deferred again and the
next transaction writes them instead.

**The hot path's transactions** (a visit's checkpoint, a model call's record) on SQLite run on a
driver connection the process keeps for them (:func:`hot_transaction`): ``BEGIN IMMEDIATE``, the
statements on the driver's cursor, ``COMMIT``, under the same write lock — without SQLAlchemy's
connection, transaction and pool objects around each, which cost as much as the statements.

The schema always comes from the alembic migrations (:func:`init_db`), never from
``metadata.create_all``, so a database built here is exactly what a deployment gets.

**When the database itself fails** — its disk is full, its file is damaged, another process
holds its lock past the busy timeout, it cannot be opened — the driver's error is raised as a
:class:`~flows.store.errors.StoreUnavailable` (:mod:`flows.store.faults`) from every transaction
here (:func:`session`, :func:`connection`, :func:`hot_transaction`) and from :func:`init_db`: one
sentence naming the database and what to do, which the CLI prints without a traceback. The
transaction was rolled back, so nothing of it was written.
"""

from __future__ import annotations

import os
import re
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import Engine
from sqlmodel import Session

from flows.settings import ergon_home
from flows.store import faults, wal
from flows.store.driver import DriverConnection, sql
from flows.store.errors import StoreUnavailable

#: Execution option that makes the SQLite ``begin`` hook take the write lock up front.
IMMEDIATE = "ergon_sqlite_immediate"
#: How long a SQLite connection waits for another process's lock before it gives up.
BUSY_TIMEOUT_S = 30
#: The errors a database fault arrives as (see :func:`fault`).
_DRIVER_ERRORS = (sa.exc.DBAPIError, sqlite3.Error)

_engines: dict[str, Engine] = {}
# One writer at a time per SQLite engine inside a process: threads then queue on a lock instead
# of polling SQLite's busy handler (which sleeps up to 100 ms between tries).
_write_locks: dict[Engine, threading.RLock] = {}
#: (has work?, write it into this connection, the transaction ended: committed?) of each module
#: that defers rows (see the module docstring)
_deferred: list[tuple[Callable[[], bool], Callable[[DriverConnection], None], Callable[[bool], None]]] = []


def defer_writes(has_work: Callable[[], bool], write: Callable[[DriverConnection], None],
                 ended: Callable[[bool], None]) -> None:
    """Register deferred rows: ``write(conn)`` starts every transaction on the default database
    while ``has_work()`` (see the module docstring); ``conn`` is a Core connection, or on SQLite's
    hot path a :class:`HotTransaction` (driver statements only). ``ended(committed)`` is called
    in the same thread, once, when a transaction ``write`` was called in has ended — even when
    ``write`` raised: the rows it wrote are in the database, or (rolled back) must be deferred
    again. Transactions ``write`` was not called in are not reported, so a module may hold
    something (a lock) from ``write`` to ``ended``, nested transactions included."""
    _deferred.append((has_work, write, ended))


def _write_deferred(conn: DriverConnection, wrote: list[Callable[[bool], None]]) -> None:
    """Write every module's deferred rows into ``conn``; ``wrote`` collects whom to tell the end."""
    for has_work, write, ended in _deferred:
        if has_work():
            wrote.append(ended)  # before writing: a write that raises still hears its transaction end
            write(conn)


def _deferred_ended(wrote: list[Callable[[bool], None]], committed: bool) -> None:
    for ended in wrote:
        ended(committed)


def flush_deferred() -> None:
    """Write the deferred rows now, in a transaction of their own (nothing when there are none)."""
    if any(has_work() for has_work, _, _ in _deferred):
        with connection(write=True):
            pass
_migrated: set[str] = set()
_lock = threading.Lock()


def database_url() -> str:
    """``ERGON_DATABASE_URL``, or the SQLite file in :func:`ergon_home`."""
    url = os.environ.get("ERGON_DATABASE_URL")
    if url:
        return url
    return f"sqlite:///{ergon_home() / 'ergon.db'}"


#: The default URL per (ERGON_DATABASE_URL, ERGON_HOME, working folder): resolving the state
#: folder touches the file system, and every store call asks for the engine.
_default_urls: dict[tuple[str | None, str | None, str | None], str] = {}


def _default_url() -> str:
    url_set, home = os.environ.get("ERGON_DATABASE_URL"), os.environ.get("ERGON_HOME")
    # The working folder is asked for only when the state folder is relative to it (no
    # ERGON_HOME, or a relative one): os.getcwd releases the interpreter, and getting it back
    # waits for whichever thread holds it — with one busy thread beside it this call took
    # 0.35 ms instead of 5 µs (2026-12-07), on the path of every model call's record.
    relative = not url_set and not (home and os.path.isabs(os.path.expanduser(home)))
    key = (url_set, home, os.getcwd() if relative else None)
    url = _default_urls.get(key)
    if url is None:
        url = _default_urls[key] = database_url()
    return url


def get_engine(url: str | None = None) -> Engine:
    """The engine for ``url`` (default :func:`database_url`), created once per URL per process."""
    url = url or _default_url()
    with _lock:
        engine = _engines.get(url)
        if engine is None:
            engine = _create_engine(url)
            _engines[url] = engine
            _write_locks[engine] = threading.RLock()
        return engine


def fault(exc: BaseException, url: str | None = None) -> StoreUnavailable | None:
    """What ``exc`` means when it is a fault of the database at ``url`` (default: the store's) —
    a full disk, a damaged file, a held lock — or None (see :mod:`flows.store.faults`)."""
    return faults.fault_of(exc, url or _default_url(), waited_s=BUSY_TIMEOUT_S)


def _create_engine(url: str) -> Engine:
    if sa.make_url(url).get_backend_name() == "postgresql":
        from importlib.util import find_spec

        if find_spec("psycopg") is None:  # the PostgreSQL driver is an optional dependency, the `postgres` extra
            from flows.errors import ErgonError

            raise ErgonError("the store on PostgreSQL (ERGON_DATABASE_URL) needs the psycopg driver, which is not "
                             "installed; install it with: pip install 'ergon[postgres]'")
    if sa.make_url(url).get_backend_name() != "sqlite":
        # pre_ping: PostgreSQL connections die with server restarts and idle timeouts.
        return sa.create_engine(url, pool_pre_ping=True)
    database = sa.make_url(url).database
    if database and database != ":memory:" and not os.path.exists(database):
        # created owner-only (SQLite gives its -wal and -shm files the database file's mode):
        # the store holds sealed secrets, answers and every prompt
        try:
            os.close(os.open(database, os.O_CREAT | os.O_WRONLY, 0o600))
        except OSError as exc:
            raise faults.cannot_create(database, exc) from exc
    # Threads share the engine (foreach/branch bodies run in a thread pool); the pool hands each
    # thread its own connection, so check_same_thread only gets in the way.
    engine = sa.create_engine(url, connect_args={"check_same_thread": False, "timeout": BUSY_TIMEOUT_S})
    _install_sqlite_hooks(engine)
    wal.watch(engine)
    return engine


def _install_sqlite_hooks(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection, _record) -> None:  # pragma: no cover - trivial
        # Hand transaction control to SQLAlchemy (the `begin` hook below): pysqlite's own
        # implicit BEGIN comes too late (only before DML) and is always DEFERRED.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_S * 1000}")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        # the log is checkpointed by a thread, not inside a commit (flows.store.wal)
        cursor.execute(f"PRAGMA wal_autocheckpoint={wal.SAFETY_NET_PAGES}")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection) -> None:
        immediate = connection.get_execution_options().get(IMMEDIATE, False)
        # on the driver itself: SQLAlchemy's statement execution around it cost as much as a
        # visit's own statements (every store transaction begins here)
        connection.connection.driver_connection.execute("BEGIN IMMEDIATE" if immediate else "BEGIN")


def is_sqlite(engine: Engine | None = None) -> bool:
    return (engine or get_engine()).dialect.name == "sqlite"


@contextmanager
def session(*, write: bool = False, url: str | None = None) -> Iterator[Session]:
    """A session that commits on success and rolls back on error.

    ``write=True`` takes SQLite's write lock at the start of the transaction (see the module
    docstring); use it for anything that reads and then writes. Objects stay usable after the
    block (``expire_on_commit=False``), so callers never need a session of their own.
    """
    if url is None and not write:
        flush_deferred()
    engine = get_engine(url)
    sqlite_writer = write and engine.dialect.name == "sqlite"
    try:
        with _write_locks[engine] if sqlite_writer else nullcontext(), Session(engine, expire_on_commit=False) as s:
            if sqlite_writer:
                s.connection(execution_options={IMMEDIATE: True})
            wrote: list[Callable[[bool], None]] = []
            try:
                if write and url is None and _deferred:
                    _write_deferred(s.connection(), wrote)
                yield s
                s.commit()
            except BaseException:
                try:
                    s.rollback()
                finally:  # even when the rollback fails: a module may hold a lock until it hears the end
                    _deferred_ended(wrote, False)
                raise
            _deferred_ended(wrote, True)
    except _DRIVER_ERRORS as exc:
        if (said := fault(exc, url)) is None:
            raise
        raise said from exc


@contextmanager
def connection(*, write: bool = False) -> Iterator[sa.Connection]:
    """A Core connection inside a transaction that commits on success, with the same write-lock
    rules as :func:`session`. For the engine's per-visit writes: without the ORM session and its
    unit of work a visit's two writes cost about a third (measured in benchmarks/runtime.py)."""
    if not write:
        flush_deferred()
    engine = get_engine()
    sqlite_writer = write and engine.dialect.name == "sqlite"
    options = {IMMEDIATE: True} if sqlite_writer else {}
    wrote: list[Callable[[bool], None]] = []
    try:
        with _write_locks[engine] if sqlite_writer else nullcontext(), engine.connect() as conn:
            try:
                with conn.execution_options(**options).begin():
                    if write and _deferred:
                        _write_deferred(conn, wrote)
                    yield conn
            except BaseException:
                _deferred_ended(wrote, False)
                raise
            _deferred_ended(wrote, True)
    except _DRIVER_ERRORS as exc:
        if (said := fault(exc)) is None:
            raise
        raise said from exc


class HotTransaction:
    """A write transaction on the process's SQLite writer connection (:func:`hot_transaction`).

    It offers what :class:`flows.store.driver.DriverStatement` reads of a Core connection — the
    ``dialect`` and ``connection.driver_connection`` — and nothing else: only driver statements
    run in it."""

    __slots__ = ("connection", "dialect")

    def __init__(self, connection: Any, dialect: sa.Dialect) -> None:
        self.connection = connection
        self.dialect = dialect


#: engine → (the process that opened it, its writer connection): a forked child opens its own
_writers: dict[Engine, tuple[int, HotTransaction]] = {}


def _writer(engine: Engine) -> HotTransaction:
    found = _writers.get(engine)
    if found is None or found[0] != os.getpid():
        # a pooled driver connection, so it got the pool's `connect` hook (WAL, busy timeout, ...);
        # held for the life of the process (or until dispose_all)
        found = _writers[engine] = (os.getpid(), HotTransaction(engine.raw_connection(), engine.dialect))
    return found[1]


@contextmanager
def hot_transaction() -> Iterator[sa.Connection | HotTransaction]:
    """A write transaction for the per-visit hot path, committed on success; the statements in it
    must be :mod:`flows.store.driver` statements.

    On SQLite it is a :class:`HotTransaction` on the process's writer connection: ``BEGIN
    IMMEDIATE`` and ``COMMIT`` on the driver, under the engine's write lock, deferred rows first —
    the same rules as :func:`connection`. Measured on a visit's start and close (2,000 in a row):
    232 → 128 µs of CPU; SQLAlchemy's connection, transaction and pool checkout/checkin around
    each were as much as the statements. Elsewhere (PostgreSQL) it is ``connection(write=True)``."""
    engine = get_engine()
    if engine.dialect.name != "sqlite":
        with connection(write=True) as conn:
            yield conn
        return
    try:
        with _write_locks[engine]:
            tx = _writer(engine)
            sql("begin", "BEGIN IMMEDIATE", [], engine.dialect).run(tx, {})
            wrote: list[Callable[[bool], None]] = []
            try:
                if _deferred:
                    _write_deferred(tx, wrote)
                yield tx
                sql("commit", "COMMIT", [], engine.dialect).run(tx, {})
            except BaseException:
                try:
                    if tx.connection.driver_connection.in_transaction:
                        tx.connection.driver_connection.execute("ROLLBACK")
                finally:  # as in session(): the end is reported even when the rollback fails
                    _deferred_ended(wrote, False)
                raise
            _deferred_ended(wrote, True)
    except _DRIVER_ERRORS as exc:
        if (said := fault(exc)) is None:
            raise
        raise said from exc


def alembic_config(url: str | None = None):
    """An alembic ``Config`` for the packaged migrations, pointed at ``url``."""
    from alembic.config import Config

    ini = Path(__file__).with_name("alembic.ini")
    cfg = Config(str(ini))
    # Absolute, so that alembic finds the scripts whatever the working directory.
    cfg.set_main_option("script_location", str(ini.parent / "migrations"))
    cfg.attributes["url"] = url or database_url()
    return cfg


def init_db(url: str | None = None) -> None:
    """Bring the database at ``url`` up to the latest migration (``alembic upgrade head``).

    Cheap after the first call in a process, and cheap in a fresh process when the database is
    already at head (:func:`_at_head`): a deployment's flow-run process, every CLI command and the
    dashboard call this first, and importing alembic and loading its scripts costs more than the
    rest of a small run's set-up. Safe to run from several processes at once: the migration
    transaction holds the write lock, so a second process waits and then finds the schema at head.
    """
    url = url or database_url()
    if url in _migrated:
        return
    try:
        if not _at_head(url):
            from alembic import command

            command.upgrade(alembic_config(url), "head")
    except _DRIVER_ERRORS as exc:
        if (said := fault(exc, url)) is None:
            raise
        raise said from exc
    _migrated.add(url)


_REVISION = re.compile(r"^revision(?:\s*:\s*str)?\s*=\s*['\"]([^'\"]+)['\"]", re.M)
_DOWN_REVISION = re.compile(r"^down_revision(?:\s*:[^=]+)?\s*=\s*(?:None|['\"]([^'\"]+)['\"])\s*$", re.M)


def head_revision() -> str | None:
    """The one head of the packaged migrations, read from their files without alembic; None
    when that reading is not certain (a merge, a branch, a file it cannot parse) — then
    :func:`init_db` leaves the question to alembic."""
    revisions: set[str] = set()
    downs: set[str] = set()
    for script in (Path(__file__).with_name("migrations") / "versions").glob("*.py"):
        if script.name == "__init__.py":
            continue
        text = script.read_text(encoding="utf-8")
        revision, down = _REVISION.findall(text), _DOWN_REVISION.findall(text)
        if len(revision) != 1 or len(down) != 1:
            return None
        revisions.add(revision[0])
        if down[0]:
            downs.add(down[0])
    heads = revisions - downs
    return heads.pop() if len(heads) == 1 and downs <= revisions else None


def _at_head(url: str) -> bool:
    """Whether the database already records the migrations' head (and only it); False when in
    doubt (no ``alembic_version`` table, an unreadable database, several heads)."""
    head = head_revision()
    if head is None:
        return False
    try:
        with get_engine(url).connect() as conn:
            stamped = [row[0] for row in conn.exec_driver_sql("SELECT version_num FROM alembic_version")]
    except sa.exc.DBAPIError as exc:
        if fault(exc, url) is not None:
            raise  # a full disk, a damaged file, a held lock: alembic would only meet it again
        return False
    return stamped == [head]


def warm_up(url: str | None = None) -> None:
    """Do now what the first store call of a fresh process would: bring the schema to head, open
    the engine, and configure the ORM mappers (SQLAlchemy does that at the first query, about
    0.1 s for the store's tables). A deployment's flow-run process calls it while it loads its
    flow, before Prefect starts the body (see :mod:`flows.prefect.deployments`)."""
    from sqlalchemy.orm import configure_mappers

    from flows.store import models  # noqa: F401  (maps the tables)

    init_db(url)
    get_engine(url)
    configure_mappers()


def dispose_all() -> None:
    """Close every pooled connection and forget engines (tests, forked workers). The log
    checkpointer forgets them too: no connection to their databases opens after this returns."""
    wal.forget_all()
    with _lock:
        for pid, writer in _writers.values():
            if pid == os.getpid():  # a forked child leaves its parent's connection alone
                writer.connection.close()
        _writers.clear()
        for engine in _engines.values():
            engine.dispose()
        _engines.clear()
        _write_locks.clear()
        _migrated.clear()
