"""Open MCP sessions, kept for the calls of one run instead of one session per call.

A session with an MCP server costs a connection and the protocol's handshake, and for a stdio
server the start of its process (about 0.3–1 s for a Python server on the 2-core machine the
benchmarks run on). So the first call of a run to a server opens a session; the run's later calls
to it, one after another or side by side (the protocol numbers its requests), use the same one.

A session belongs to one event loop and one run (:class:`~flows.tools.context.ToolContext`'s
``run_id``; a call outside any run has a session of its own, closed as the call ends): an MCP
server may keep state between calls, and one run must not see another's. Its connection lives in
a task of its own on that loop (the SDK's client must be entered and left by the same task),
which closes it

* when the run ends: the run's body awaits :func:`close_run`. A session left to the end of its
  loop would be closed by the loop's cancelling its task, and the SDK's shutdown, cancelled that
  way, can wait for ever on the server's process (one of three test processes run side by side
  on the 2-core machine hung so at its end);
* after :data:`IDLE_SECONDS` without a call (a run that waits long between calls);
* when a call on it fails in any way but a tool's own error answer (a timeout, a server that went
  away, a refused token): the session is dropped at once, the calls already on it finish, and the
  next call opens a new one — a failure never sticks to a run.

A server that goes away between two calls (its process killed, an HTTP server restarted) is
found out by the next call, which fails ("closed the connection") and drops the session: the
SDK does not say whether a request on a closed connection reached the server, so that call is
not repeated here — a node's ``retry`` takes it up, on a new session.

What a session holds besides its client is what its opening prepared (the server's tool listing,
which each call holds against the lock).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Hashable
from contextlib import AbstractAsyncContextManager
from typing import Any, Generic, TypeVar

from flows.tools.context import current

#: a session unused this long is closed (seconds)
IDLE_SECONDS = 30.0
#: the longest a run's end waits for its sessions to close (the SDK closes a stdio server's input,
#: waits 2 s for it to exit, then ends it: about 4 s at most)
CLOSE_SECONDS = 10.0

C = TypeVar("C")
P = TypeVar("P")

#: loop → (server key, run id) → its open session
_open: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[Hashable, str | None], Session[Any, Any]]] = (
    weakref.WeakKeyDictionary())
_lock = threading.Lock()


class Session(Generic[C, P]):
    """One open session: ``client`` once :meth:`ready`, with what its opening ``prepared``; held
    by the calls on it (:func:`session`)."""

    def __init__(self, key: tuple[Hashable, str | None],
                 connect: Callable[[dict[str, Any]], AbstractAsyncContextManager[C]],
                 prepare: Callable[[C], Awaitable[P]], name: str) -> None:
        self.key = key
        self.loop = asyncio.get_running_loop()
        self.client: C | None = None
        self.prepared: P | None = None
        #: what the connection notes down for the calls on it (``connect`` is given it)
        self.notes: dict[str, Any] = {}
        self._opened: asyncio.Future[None] = self.loop.create_future()
        self._stop = asyncio.Event()
        self._in_flight = 0
        self._last_used = time.monotonic()
        self._connect, self._prepare = connect, prepare
        self.task = self.loop.create_task(self._own(), name=name)

    async def ready(self) -> None:
        """Wait until the session is open (its opening's error is raised here, to every caller).
        A caller that gives up waiting (its timeout) does not stop the opening for the others."""
        await asyncio.shield(self._opened)

    def drop(self) -> None:
        """No new call gets this session; it closes once the calls on it have ended."""
        _forget(self)
        self.loop.call_soon_threadsafe(self._stop.set)

    async def _own(self) -> None:
        try:
            async with self._connect(self.notes) as client:
                prepared = await self._prepare(client)
                self.client, self.prepared = client, prepared
                self._opened.set_result(None)
                await self._serve()
        except BaseException as exc:
            if not self._opened.done():
                self._opened.set_exception(exc if isinstance(exc, Exception) else ConnectionError("closed"))
                self._opened.exception()  # retrieved: a caller that gave up must not leave it unread
            if not isinstance(exc, Exception):
                raise  # a cancellation (the loop ends) goes on
        finally:
            _forget(self)

    async def _serve(self) -> None:
        """Until told to stop, once no call is on the session; or idle for :data:`IDLE_SECONDS`."""
        while True:
            if self._stop.is_set():
                if self._in_flight == 0:
                    return
                await asyncio.sleep(0.05)  # the calls already on it end first
                continue
            idle = time.monotonic() - self._last_used
            if self._in_flight == 0 and idle >= IDLE_SECONDS:
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), IDLE_SECONDS - idle if self._in_flight == 0 else IDLE_SECONDS)


@contextlib.asynccontextmanager
async def session(server_key: Hashable, connect: Callable[[dict[str, Any]], AbstractAsyncContextManager[C]],
                  prepare: Callable[[C], Awaitable[P]], name: str) -> AsyncIterator[Session[C, P]]:
    """The open session of the current run with the server ``server_key`` on this loop, or a new
    one: ``connect(notes)`` enters the connection, ``prepare(client)`` what the calls need of it.
    Held for one call (await :meth:`Session.ready` first): it stays open until the block ends.
    Outside a run the session is the call's own, closed (and waited for) as the block ends."""
    loop = asyncio.get_running_loop()
    run_id = current().run_id
    key = (server_key, run_id)
    with _lock:
        sessions = _open.setdefault(loop, {})
        found = sessions.get(key) if run_id is not None else None
        if found is None:
            found = Session(key, connect, prepare, name)
            if run_id is not None:
                sessions[key] = found
        found._in_flight += 1
    try:
        yield found
    finally:
        found._in_flight -= 1
        found._last_used = time.monotonic()
        if run_id is None:
            found.drop()
            await asyncio.wait([found.task], timeout=CLOSE_SECONDS)


def _forget(session: Session[Any, Any]) -> None:
    with _lock:
        sessions = _open.get(session.loop, {})
        if sessions.get(session.key) is session:
            del sessions[session.key]


def open_sessions() -> list[Session[Any, Any]]:
    """The sessions open now, on every loop."""
    with _lock:
        return [s for sessions in _open.values() for s in sessions.values()]


async def close_run(run_id: str) -> None:
    """Close the sessions of ``run_id`` (its body calls this as the run ends) and wait, at most
    :data:`CLOSE_SECONDS`, for those on this loop to be closed: the loop may end next, and a
    session's task cancelled with it could leave its server's process behind (see the module
    docstring)."""
    loop = asyncio.get_running_loop()
    mine = [s for s in open_sessions() if s.key[1] == run_id]
    for found in mine:
        with contextlib.suppress(RuntimeError):  # its loop is already closed: nothing left to close
            found.drop()
    waiting = [s.task for s in mine if s.loop is loop]
    if waiting:
        await asyncio.wait(waiting, timeout=CLOSE_SECONDS)
