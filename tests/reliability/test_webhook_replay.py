"""Webhooks against a hostile sender, on real `ergon serve` processes and a real store.

* A signed request that started a run is refused (401, nothing started) when it is sent again
  after `ergon serve` restarted, and when it reaches two serve processes sharing one store at the
  same moment exactly one of them starts its run: replay protection lives in the store. A request
  whose start was refused (422) started nothing and spent nothing: sent again once the
  definition takes it, it starts its run.
* Malformed headers never make the server fail: a signature or timestamp header with non-ASCII
  bytes is a 401; a Content-Length that is not a number, negative, larger than the body that
  follows, over the limit, or a body sent chunked is refused with a 4xx before any body is read
  beyond it — and the server keeps serving.

Requests with malformed headers are written byte by byte on a socket: HTTP client libraries
refuse to send them.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "triggers"))

from trigger_helpers import Served, free_port, wait_for  # noqa: E402

from flows.triggers.webhooks import MAX_BODY_BYTES, SIGNATURE_HEADER, TIMESTAMP_HEADER, sign  # noqa: E402

pytestmark = pytest.mark.prefect

HOOKED = """
kind: pipeline
name: replayed
context:
  schema: {type: object, properties: {who: {type: string}, last: {type: string}}}
  initial: {who: nobody}
triggers:
  - {type: webhook, path: /hooks/replayed, secret: replay_secret, as_user: hook-bot}
nodes:
  note: {type: tool, tool: mark, input: {name: "{{who}}"}, writes: [last]}
"""
SECRET = "replay-secret-value"
PATH = "/hooks/replayed"


@pytest.fixture
def project(prefect_api, store, definitions):
    """The definitions folder (one webhook trigger) and the environment of its `ergon serve`
    processes, which share the test's store."""
    from flows import secrets

    (definitions / "replayed.yaml").write_text(HOOKED)
    secrets.set_secret("replay_secret", SECRET)
    return definitions, {**os.environ, "COLUMNS": "200"}


def serve(project, name: str) -> Served:
    folder, env = project
    server = Served(folder, env, free_port())
    server.log = folder.parent / f"serve-{name}.log"  # several processes: a log each
    return server.start()


def signed_request(who: str) -> tuple[bytes, list[tuple[str, str]]]:
    body = json.dumps({"who": who}).encode()
    stamp = str(int(time.time()))
    return body, [(TIMESTAMP_HEADER, stamp), (SIGNATURE_HEADER, sign(SECRET, stamp, body))]


def raw_post(port: int, headers: list[tuple[str | bytes, str | bytes]], body: bytes = b"", *,
             path: str = PATH, length: str | bytes | None = "auto", end_body: bool = True) -> tuple[int | None, dict]:
    """POST written by hand: headers as given (bytes are sent untouched), Content-Length the
    body's unless ``length`` says otherwise (None: no header), the sending side closed after the
    body when ``end_body``. (status, JSON answer); status None when no answer came in 20 s."""
    def raw(value: str | bytes) -> bytes:
        return value if isinstance(value, bytes) else value.encode("latin-1")

    lines = [f"POST {path} HTTP/1.1".encode(), b"Host: 127.0.0.1", b"Content-Type: application/json"]
    if length == "auto":
        length = str(len(body))
    if length is not None:
        lines.append(b"Content-Length: " + raw(length))
    lines += [raw(k) + b": " + raw(v) for k, v in headers]
    with socket.create_connection(("127.0.0.1", port), timeout=20) as sock:
        sock.sendall(b"\r\n".join(lines) + b"\r\n\r\n" + body)
        if end_body:
            sock.shutdown(socket.SHUT_WR)
        data = b""
        try:
            while chunk := sock.recv(65536):
                data += chunk
        except TimeoutError:
            pass
    if not data:
        return None, {}
    head, _, payload = data.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    return status, json.loads(payload) if payload else {}


def runs_of_replayed():
    from flows.store import runs as run_store

    return run_store.list_runs(definition="replayed", limit=100)[0]


def finished(run_ids: list[str]) -> None:
    """Wait until the runs end (so stopping serve kills no run midway), each completed."""
    from flows.store import runs as run_store

    for run_id in run_ids:
        run = wait_for(lambda run_id=run_id: (r := run_store.get_run(run_id)) and r.status in ("completed", "failed") and r,
                       120, f"run {run_id}")
        assert run.status == "completed", run.error


def test_a_request_replayed_after_serve_restarts_is_refused(project):
    folder, _ = project
    body, headers = signed_request("once")
    first = serve(project, "first")
    try:
        # refused by the definition (its schema, changed while serving, no longer takes "once"):
        # nothing started, so the signature is not spent and the same request may come again
        (folder / "replayed.yaml").write_text(HOOKED.replace("{type: string}, last", "{type: string, maxLength: 2}, last")
                                              .replace("who: nobody", "who: no"))
        status, answer = raw_post(first.port, headers, body)
        assert status == 422, answer
        (folder / "replayed.yaml").write_text(HOOKED)
        status, answer = raw_post(first.port, headers, body)
        assert status == 202, answer
        finished([answer["run_id"]])
    finally:
        assert first.stop() == 0, first.log.read_text()[-2000:]

    second = serve(project, "second")
    try:
        status, answer = raw_post(second.port, headers, body)
    finally:
        second.stop()
    assert status == 401 and "replay" in answer["error"], answer
    assert len(runs_of_replayed()) == 1, "the replay started a second run"


def send_together(ports: list[int], headers, body: bytes) -> list[tuple[int | None, dict]]:
    """The same request to each port, the sends released at the same moment."""
    answers: list[tuple[int | None, dict]] = [(None, {})] * len(ports)
    together = threading.Barrier(len(ports))

    def send(i: int) -> None:
        together.wait()
        answers[i] = raw_post(ports[i], headers, body)

    threads = [threading.Thread(target=send, args=(i,)) for i in range(len(ports))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return answers


def test_two_serve_processes_on_one_store_start_a_request_once(project):
    servers = [serve(project, "a"), serve(project, "b")]
    try:
        started: list[str] = []
        for attempt in range(5):
            body, headers = signed_request(f"both-{attempt}")
            answers = send_together([s.port for s in servers], headers, body)
            statuses = sorted(status for status, _ in answers)
            assert statuses == [202, 401], answers
            started += [a["run_id"] for s, a in answers if s == 202]
        finished(started)
    finally:
        for server in servers:
            server.stop()
    assert sorted(r.id for r in runs_of_replayed()) == sorted(started)


def _malformed(now: str) -> dict[str, dict]:
    """Each case: the raw_post arguments and the statuses it may be answered."""
    body = b'{"who": "malformed"}'
    good = sign(SECRET, now, body)
    return {
        "signature latin-1": dict(headers=[(TIMESTAMP_HEADER, now), (SIGNATURE_HEADER, b"sha256=" + b"\xe9" * 64)],
                                  body=body, expect={401}),
        "signature utf-8": dict(headers=[(TIMESTAMP_HEADER, now), (SIGNATURE_HEADER, "sha256=ü€".encode())],
                                body=body, expect={401}),
        "signature after a good one": dict(headers=[(TIMESTAMP_HEADER, now),
                                                    (SIGNATURE_HEADER, good.encode() + "\u00e9".encode())],
                                           body=body, expect={401}),
        "timestamp utf-8 digits": dict(headers=[(TIMESTAMP_HEADER, "١٧٠٠٠٠٠٠٠٠".encode()),
                                                (SIGNATURE_HEADER, good)], body=body, expect={401}),
        "timestamp latin-1": dict(headers=[(TIMESTAMP_HEADER, now.encode() + b"\xb2"), (SIGNATURE_HEADER, good)],
                                  body=body, expect={401}),
        "length not a number": dict(headers=[(TIMESTAMP_HEADER, now), (SIGNATURE_HEADER, good)], body=body,
                                    length="twenty", expect={400}),
        "length negative": dict(headers=[(TIMESTAMP_HEADER, now), (SIGNATURE_HEADER, good)], body=body,
                                length="-1", end_body=False, expect={400}),
        "length non-ASCII digits": dict(headers=[(TIMESTAMP_HEADER, now), (SIGNATURE_HEADER, good)], body=body,
                                        length="２０".encode(), expect={400}),
        "length longer than the body": dict(headers=[(TIMESTAMP_HEADER, now), (SIGNATURE_HEADER, good)], body=body,
                                            length=str(len(body) + 50), expect={400}),
        "two lengths": dict(headers=[(TIMESTAMP_HEADER, now), (SIGNATURE_HEADER, good),
                                     ("Content-Length", str(len(body) + 1))], body=body, expect={400}),
        "length over the limit": dict(headers=[(TIMESTAMP_HEADER, now), (SIGNATURE_HEADER, good)], body=body,
                                      length=str(MAX_BODY_BYTES + 1), end_body=False, expect={413}),
        "length of 5000 digits": dict(headers=[(TIMESTAMP_HEADER, now), (SIGNATURE_HEADER, good)], body=body,
                                      length="9" * 5000, end_body=False, expect={413}),
        "chunked body": dict(headers=[(TIMESTAMP_HEADER, now), (SIGNATURE_HEADER, good),
                                      ("Transfer-Encoding", "chunked")],
                             body=b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body), length=None, expect={411}),
    }


def test_malformed_headers_are_refused_not_failed(project):
    server = serve(project, "malformed")
    try:
        wrong = {}
        for name, case in _malformed(str(int(time.time()))).items():
            expect = case.pop("expect")
            status, answer = raw_post(server.port, **case)
            if status not in expect or not isinstance(answer.get("error"), str):
                wrong[name] = (status, answer)
        assert not wrong, f"answered wrongly: {wrong}"
        assert server.proc.poll() is None, "the server died"
        # still serving: a good request afterwards starts its run
        body, headers = signed_request("after")
        status, answer = raw_post(server.port, headers, body)
        assert status == 202, answer
        finished([answer["run_id"]])
    finally:
        server.stop()
    assert [r.inputs.get("who") for r in runs_of_replayed()] == ["after"], "a malformed request started a run"
    assert "Traceback" not in server.log.read_text(), server.log.read_text()[-3000:]


@pytest.mark.postgres
@pytest.mark.skipif(not os.environ.get("ERGON_TEST_POSTGRES_URL"),
                    reason="set ERGON_TEST_POSTGRES_URL=postgresql+psycopg://user@host:port/db to run")
def test_deliveries_racing_on_postgresql_are_remembered_once(monkeypatch):
    """On PostgreSQL the inserts of one signature run side by side: the key lets exactly one in."""
    import hashlib
    import uuid
    from concurrent.futures import ThreadPoolExecutor
    from datetime import UTC, datetime, timedelta

    from flows.store import db, webhook_deliveries

    url = os.environ["ERGON_TEST_POSTGRES_URL"]
    monkeypatch.setenv("ERGON_DATABASE_URL", url)
    db.init_db(url)
    try:
        expires = datetime.now(UTC) + timedelta(minutes=10)
        for _round in range(5):
            key = hashlib.sha256(uuid.uuid4().bytes).hexdigest()
            together = threading.Barrier(8)

            def record(_i: int, key: str = key, together: threading.Barrier = together) -> bool:
                together.wait()
                return webhook_deliveries.remember(key, "replayed", expires)

            with ThreadPoolExecutor(8) as pool:
                assert sorted(pool.map(record, range(8))) == [False] * 7 + [True]
    finally:
        db.dispose_all()
