"""What a run asks Prefect's server beyond what any flow run asks: nothing it does not use.

Ergon persists no Prefect results (its store is the checkpoint), so its flows must not make
Prefect's engine look up the server's default result storage, a round trip it made twice a run
(see ``flows.prefect.build.local_result_storage``). The requests are counted on Prefect's own
clients, called through: the run is real.
"""

from __future__ import annotations

import functools
from collections import Counter

import pytest

pytestmark = pytest.mark.prefect

CHAIN = """
format_version: 1
process: asks
initial: first
nodes:
  first: {type: tool, tool: noop, transitions: [{to: done}]}
  done: {type: final}
"""


def _counting(calls: Counter, name: str, method, is_async: bool):  # type: ignore[no-untyped-def]
    if is_async:
        @functools.wraps(method)
        async def counted_async(*args, **kwargs):  # type: ignore[no-untyped-def]
            calls[name] += 1
            return await method(*args, **kwargs)
        return counted_async

    @functools.wraps(method)
    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls[name] += 1
        return method(*args, **kwargs)
    return counted


def test_a_run_never_asks_for_the_servers_default_result_storage(run_def, monkeypatch):
    from prefect.client.orchestration import PrefectClient, SyncPrefectClient

    calls: Counter = Counter()
    for client in (PrefectClient, SyncPrefectClient):
        for name in ("read_server_default_result_storage", "create_flow_run"):
            monkeypatch.setattr(client, name, _counting(calls, f"{client.__name__}.{name}", getattr(client, name),
                                                        is_async=client is PrefectClient))

    result = run_def({"asks.yaml": CHAIN}, "asks")

    assert result["status"] == "completed", result
    assert calls["PrefectClient.create_flow_run"] == 1, f"the run was not counted: {dict(calls)}"
    asked = calls["PrefectClient.read_server_default_result_storage"] + \
        calls["SyncPrefectClient.read_server_default_result_storage"]
    assert asked == 0, dict(calls)
