"""The garbage collector around heavy imports (:mod:`flows.heap`): paused while they run, and what
start-up made frozen only in a process that runs one thing — the `ergon` command, Prefect's
flow-run process — never in a caller that lives on.

The probes that freeze run in a fresh interpreter: a frozen object stays frozen for the process.
Runs seen from inside their process: ``tests/deploy/test_one_run_processes.py``.
"""

from __future__ import annotations

import importlib.machinery
import sys
import types

import pytest

from fresh_python import python_json


_NESTED = """
import gc, json, weakref
from flows import heap
heap.mark_one_run_process()

class Node:
    pass

with heap.heavy_imports():
    with heap.heavy_imports(garbage={garbage}):
        cycle = Node(); cycle.me = cycle  # what an import leaves behind: garbage only a collection finds
        ref = weakref.ref(cycle)
        del cycle
    inner_done_collector_on = gc.isenabled()
print(json.dumps({{"inner_done_collector_on": inner_done_collector_on, "collector_on": gc.isenabled(),
                  "frozen": gc.get_freeze_count(), "garbage_kept": ref() is not None}}))
"""


@pytest.mark.parametrize("garbage", [True, False])
def test_a_one_run_process_freezes_when_the_outermost_block_ends(garbage: bool) -> None:
    after = python_json(_NESTED.format(garbage=garbage), timeout=180)
    assert after["inner_done_collector_on"] is False, "an inner block must not turn the collector back on"
    assert after["collector_on"] is True and after["frozen"] > 1_000
    # a block that says it leaves garbage has it collected before the freeze; otherwise it is kept
    assert after["garbage_kept"] is (not garbage)


def test_a_process_that_lives_on_only_pauses_the_collector() -> None:
    import gc

    from flows import heap

    frozen = gc.get_freeze_count()
    with heap.heavy_imports(garbage=True):
        assert not gc.isenabled()
    assert gc.isenabled() and gc.get_freeze_count() == frozen


def test_a_caller_that_turned_the_collector_off_keeps_it_off() -> None:
    import gc

    from flows import heap

    gc.disable()
    try:
        with heap.heavy_imports():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_prefects_flow_run_process_is_a_one_run_process(monkeypatch) -> None:
    # A worker or `serve` runs a deployment's flow run as `python -m prefect.engine`.
    from flows import heap

    assert not heap.one_run_process()  # pytest's own process lives on
    engine = types.ModuleType("__main__")
    engine.__spec__ = importlib.machinery.ModuleSpec(heap.PREFECT_ENGINE_MAIN, None)
    monkeypatch.setitem(sys.modules, "__main__", engine)
    assert heap.one_run_process()


_LITELLM_IMPORT = """
import gc, json
from flows.llm._litellm import litellm
full = []
gc.callbacks.append(lambda phase, info: phase == "stop" and info["generation"] == 2 and full.append(1))
litellm()
print(json.dumps({"full_collections": len(full), "collector_on": gc.isenabled()}))
"""


def test_litellm_is_imported_without_a_full_collection() -> None:
    # With the collector on, importing litellm ran six full collections over what it was making.
    after = python_json(_LITELLM_IMPORT, timeout=180)
    assert after == {"full_collections": 0, "collector_on": True}
