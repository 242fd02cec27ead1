"""A pause whose request reached Prefect's server, but whose reply was lost, still waits for its answer.

A run pausing for a person asks Prefect for the Paused state, then saves the form (the pause's
``…-schema`` flow-run input). When the server does either and its reply never arrives (the server
killed right then, a proxy dropping the connection), Prefect's client sends the request again
once the server answers, and the server refuses the second copy:

* the state: "This run has already made this state transition" (Prefect's transitions are
  idempotent), which Prefect's own pause raises as ``Pause``;
* the form: 409, "a flow run input with this key already exists".

The run must not fail on either — the pause stands, its form is saved, and the answer resumes it.

Here a real TCP proxy in front of a real server forwards that one request and drops its reply.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import threading

import pytest

pytestmark = pytest.mark.prefect

FIELDS = [{"name": "decision", "type": "select", "required": True, "options": ["approve", "reject"]}]


class ReplyDroppingProxy:
    """Forwards HTTP between Prefect's client and its server; the first request whose bytes match
    ``marker`` reaches the server, and its connection is closed before the reply comes back.

    It serves from a daemon thread of its own until the process ends: Prefect's log and event
    workers of the flow run send through it, and drain at interpreter exit."""

    def __init__(self, upstream_port: int, marker: re.Pattern[bytes]) -> None:
        self.upstream_port, self.marker, self.dropped = upstream_port, marker, 0

    def start(self) -> int:
        loop = asyncio.new_event_loop()
        server = loop.run_until_complete(asyncio.start_server(self._connection, "127.0.0.1", 0))
        threading.Thread(target=loop.run_forever, daemon=True).start()
        return server.sockets[0].getsockname()[1]

    async def _connection(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        up_r, up_w = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        armed = asyncio.Event()

        async def to_server() -> None:
            while data := await client_r.read(65536):
                if self.marker.search(data) and not self.dropped:
                    self.dropped += 1
                    armed.set()
                up_w.write(data)
                await up_w.drain()

        async def to_client() -> None:
            while data := await up_r.read(65536):
                if armed.is_set():  # the server has stored it: the reply is lost on the way
                    return
                client_w.write(data)
                await client_w.drain()

        tasks = [asyncio.ensure_future(to_server()), asyncio.ensure_future(to_client())]
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in tasks:
            task.cancel()
        for writer in (client_w, up_w):
            with contextlib.suppress(Exception):
                writer.close()


@pytest.mark.parametrize("lost", ["state", "form"])
def test_a_pause_whose_reply_was_lost_takes_the_answer(prefect_api, lost):
    from prefect import flow
    from prefect.client.orchestration import get_client
    from prefect.flow_runs import aresume_flow_run
    from prefect.runtime import flow_run
    from prefect.settings import PREFECT_API_URL, temporary_settings

    from flows.prefect.pause import _await_answer

    key = f"review-{lost}-reply-lost"
    started: list[str] = []

    @flow(persist_result=False)
    async def waits_for_a_person() -> dict | None:
        started.append(str(flow_run.id))
        return await _await_answer(FIELDS, "review_answer", "Approve?", key, wait=60)

    async def answer_when_paused() -> None:
        async with get_client() as client:
            for _ in range(600):
                if started and (run := await client.read_flow_run(started[0])).state and run.state.is_paused():
                    try:
                        await aresume_flow_run(run.id, run_input={"decision": "approve"})
                        return
                    except RuntimeError as exc:  # Paused, and its form not saved yet
                        assert "schema not found" in str(exc), exc
                await asyncio.sleep(0.1)
        raise AssertionError("the flow run never paused")

    async def both() -> dict | None:
        waiting = asyncio.ensure_future(waits_for_a_person())
        await answer_when_paused()
        return await waiting

    port = int(prefect_api.rsplit(":", 1)[1].split("/")[0])
    marker = {  # the request for the Paused state names its key; the form's own request its input's
        "state": rb'"pause_key":\s*"' + key.encode() + rb'"',
        "form": rb'"key":\s*"paused-' + key.encode() + rb'-schema"',
    }[lost]
    proxy = ReplyDroppingProxy(port, re.compile(marker))
    with temporary_settings(updates={PREFECT_API_URL: f"http://127.0.0.1:{proxy.start()}/api"}):
        answer = asyncio.run(both())
    assert proxy.dropped == 1, f"the {lost}'s reply was never dropped: the test did not exercise the lost reply"
    assert answer == {"decision": "approve"}

    from prefect.input.actions import read_flow_run_input

    description = read_flow_run_input(key=f"paused-{key}-description", flow_run_id=started[0])
    assert description == "Approve?", "the form's description, saved after the form, is kept for Prefect's UI"
