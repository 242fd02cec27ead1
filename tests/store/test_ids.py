"""Row ids: uuid4 hex from a pool of the OS's randomness (flows/store/ids.py)."""

from __future__ import annotations

import os
import uuid

import pytest

from flows.store import ids


def test_ids_are_version_4_uuids_and_do_not_repeat_across_pools() -> None:
    made = [ids.new_id() for _ in range(ids.POOL_IDS * 5 + 3)]  # several pools, one partly used
    assert len(set(made)) == len(made)
    for value in made:
        parsed = uuid.UUID(hex=value)
        assert len(value) == 32 and value == parsed.hex
        assert parsed.version == 4 and parsed.variant == uuid.RFC_4122


def test_the_os_randomness_is_read_once_a_pool_not_once_an_id(monkeypatch: pytest.MonkeyPatch) -> None:
    reads: list[int] = []
    real = os.urandom

    def counted(n: int) -> bytes:
        reads.append(n)
        return real(n)

    monkeypatch.setattr(ids.os, "urandom", counted)
    ids._clear()
    for _ in range(ids.POOL_IDS * 3):
        ids.new_id()
    assert reads == [16 * ids.POOL_IDS] * 3  # each read of the OS's randomness lets the GIL go once


def test_a_forked_child_does_not_hand_out_its_parents_ids() -> None:
    ids.new_id()  # the pool holds unused ids at the fork
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its next ids, to the parent
        try:
            os.write(write, "".join(ids.new_id() for _ in range(8)).encode())
        finally:
            os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    with os.fdopen(read) as pipe:
        text = pipe.read()
    child = {text[i:i + 32] for i in range(0, len(text), 32)}
    parent = {ids.new_id() for _ in range(8)}
    assert len(child) == 8 and not child & parent
