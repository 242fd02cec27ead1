"""Row ids: random (version 4) UUIDs as 32 hex characters, drawn from a pool of the OS's randomness.

``uuid.uuid4()`` reads 16 bytes with ``os.urandom`` each time, and ``os.urandom`` releases the
GIL around its system call. In a flow-run process that is a hand-off point: Prefect's event and
log threads and litellm's callback threads take the GIL there, and the thread that made the id
waits until they yield it (up to the interpreter's 5 ms switch interval). Measured with cProfile
on the benchmarks: 244 µs of wall time per ``uuid4`` call on average during a foreach of model
calls, against 64 µs for Prefect's own ids; the engine makes one or two ids a visit.

So ids come from a pool: one ``os.urandom`` read gives :data:`POOL_IDS` ids, the GIL is let go
once per pool instead of once per id, and every id is still 122 bits of the OS's
cryptographically secure randomness with the version and variant bits of a uuid4 (what
``uuid.UUID(hex).version`` reads). The pool is per process: a forked child empties it at the
fork (``os.register_at_fork``), so parent and child never hand out the same bytes.
"""

from __future__ import annotations

import os
import threading

#: ids per read of the OS's randomness
POOL_IDS = 256

_pool = b""
_taken = 0
_lock = threading.Lock()


def _clear() -> None:
    global _pool, _taken, _lock
    _pool, _taken = b"", 0
    _lock = threading.Lock()  # a lock held by another thread at the fork stays held in the child


os.register_at_fork(after_in_child=_clear)


def new_id() -> str:
    """A new random id: the hex of a version-4 UUID (32 lowercase hex characters)."""
    global _pool, _taken
    with _lock:
        if _taken >= len(_pool):
            _pool, _taken = os.urandom(16 * POOL_IDS), 0
        raw = bytearray(_pool[_taken:_taken + 16])
        _taken += 16
    # the version and variant bits, as uuid4() sets them (without building a UUID: a third of the cost)
    raw[6] = (raw[6] & 0x0F) | 0x40
    raw[8] = (raw[8] & 0x3F) | 0x80
    return raw.hex()
