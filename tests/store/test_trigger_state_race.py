"""The first webhooks of a trigger arriving together each note the trigger's last run; on
PostgreSQL their transactions run side by side, both found no state row, and the second insert
broke the unique key — a 500 to a caller whose run had already started (found by
``tests/cluster/test_fleet.py``: 8 webhooks sent 4 at a time). Now the loser updates the row.

Needs ``ERGON_TEST_POSTGRES_URL`` (SQLite runs one write transaction at a time: no race there).
"""

from __future__ import annotations

import os
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest

from flows.store import db
from flows.store import triggers as trigger_store

URL = os.environ.get("ERGON_TEST_POSTGRES_URL")

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.skipif(not URL, reason="set ERGON_TEST_POSTGRES_URL=postgresql+psycopg://user@host:port/db to run"),
]


@pytest.fixture
def pg(monkeypatch):
    monkeypatch.setenv("ERGON_DATABASE_URL", URL)
    db.init_db(URL)
    yield URL
    db.dispose_all()


def test_first_updates_of_a_trigger_state_at_once_make_one_row(pg):
    threads = 8
    for _round in range(5):  # a race: several rounds, each a new trigger state
        name = f"race-{uuid.uuid4().hex[:8]}"
        together = threading.Barrier(threads)

        def note(i: int, name: str = name, together: threading.Barrier = together) -> str:
            together.wait()
            return trigger_store.upsert_trigger_state(name, 0, kind="webhook", last_run_id=f"run-{i}").last_run_id

        with ThreadPoolExecutor(threads) as pool:
            noted = list(pool.map(note, range(threads)))
        [state] = trigger_store.list_trigger_states(name)
        assert state.kind == "webhook" and state.last_run_id in noted
