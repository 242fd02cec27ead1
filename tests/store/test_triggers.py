"""Trigger states."""

from __future__ import annotations

import pytest

from flows.store import triggers as trigger_store
from flows.store.errors import StoreError


def test_trigger_state(store):
    with pytest.raises(StoreError, match="kind"):
        trigger_store.upsert_trigger_state("nightly", 0, paused=True)
    trigger_store.upsert_trigger_state("nightly", 0, kind="cron", created_by="ann")
    trigger_store.upsert_trigger_state("nightly", 1, kind="webhook")
    state = trigger_store.upsert_trigger_state("nightly", 0, paused=True, last_run_id="r1")
    assert (state.kind, state.paused, state.last_run_id, state.created_by) == ("cron", True, "r1", "ann")
    assert [(t.trigger_index, t.kind) for t in trigger_store.list_trigger_states("nightly")] == [(0, "cron"), (1, "webhook")]
    with pytest.raises(StoreError, match="no field"):
        trigger_store.upsert_trigger_state("nightly", 0, schedule="* * * * *")
