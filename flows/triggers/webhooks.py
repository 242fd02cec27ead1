"""Webhook triggers: a signed HTTP POST starts a run.

``ergon serve`` listens on 127.0.0.1 (``--webhook-port``, default 8765; put a reverse proxy with
TLS in front to expose it). A request to a trigger's ``path`` must carry:

* ``X-Ergon-Timestamp``: the time of sending, in Unix seconds;
* ``X-Ergon-Signature``: ``sha256=`` + hex HMAC-SHA256 of ``timestamp + "." + body`` keyed by the
  Ergon secret the trigger names (``ergon secrets set NAME``).

Signing the timestamp with the body, refusing timestamps more than 5 minutes away from now, and
refusing a signature already accepted in that window stop a captured request from being replayed.
Accepted signatures are kept in the store (:mod:`flows.store.webhook_deliveries`, hashed), not in
the process: a replay is refused after ``ergon serve`` restarts, and when several serve processes
share a store the same request sent to all of them at once starts one run. The key is the
signature alone, whatever the path: a request captured on one trigger cannot be replayed to
another trigger that shares its secret.

**When a signature is spent.** Only a request that starts a run spends its signature (one signed
request, at most one run). It is recorded after the signature is verified and before the run is
started — so two copies racing cannot both start one — and dropped again when the start fails.
A request refused before that (404, 401, 409 paused, 400 not a JSON object) or whose start is
refused (422) or fails (500) started nothing, so the same request sent again is answered afresh:
webhook senders take an error answer as "not delivered" and send again (Stripe retries on its
own, GitHub offers redelivery), and that retry — within the 5 minutes, or signed again with a new
timestamp — gets the one run once the trigger is resumed, the definition fixed or the server
recovered. Burning the signature there would answer the retry "replay" and lose the request.
Two limits: a serve process killed between recording and starting leaves the signature spent
with no run (the sender signs again), and a start that fails after Prefect created the flow run
(its answer lost on the way back) lets the retry start a second run.

Answers (JSON): ``202 {"run_id", "deployment", "work_pool", "flow_run_id"}`` — the run was
started (through the definition's deployment when it has one; the three are null when it runs
as a process on this host); ``401`` — signature or timestamp missing, malformed, wrong, stale or
replayed (nothing started); ``404`` — no webhook trigger has that path; ``409`` — the trigger is
paused or disabled; ``400`` — the body is not a JSON object, or its Content-Length is not a
number, is given twice with different values, or is more than the bytes that came; ``411`` — the
body is chunked (send a Content-Length); ``413`` — Content-Length over 1 MB (refused before any
of the body is read); ``408`` — the request did not arrive within 30 s; ``422 {"problems":
[...]}`` — the inputs do not fit the definition; ``500`` — the trigger's secret is not set, or
the server failed (its log says which). A request with neither Content-Length nor
Transfer-Encoding has an empty body (RFC 9112), which is ``{}``.

The JSON body (an object; empty = ``{}``) is merged **over** the trigger's ``input``: the
trigger's values are defaults the caller may override. The run records trigger ``webhook`` and
``started_by`` = the trigger's ``as_user``. It is started with :func:`flows.runs.start_background`,
so the answer does not wait for the run, and the run survives the server: a deployed definition
runs on a worker of its deployment's pool, never on the host that received the webhook.

The standard library's threading HTTP server is enough here: requests are few and each does a
signature check and a start; no new dependency.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from flows.trigger_refs import TriggerRef

SIGNATURE_HEADER = "X-Ergon-Signature"
TIMESTAMP_HEADER = "X-Ergon-Timestamp"
MAX_AGE_SECONDS = 300
MAX_BODY_BYTES = 1_000_000
#: seconds a connection may take to send its request (headers and body) before it is dropped
REQUEST_TIMEOUT_SECONDS = 30
DEFAULT_PORT = 8765
log = logging.getLogger("ergon.webhooks")


def sign(secret: str, timestamp: str | int, body: bytes) -> str:
    """The ``X-Ergon-Signature`` value for ``body`` sent at ``timestamp`` (senders use this)."""
    mac = hmac.new(secret.encode(), str(timestamp).encode() + b"." + body, hashlib.sha256)
    return "sha256=" + mac.hexdigest()


def verify(secret: str, timestamp: str | None, signature: str | None, body: bytes, *, now: float | None = None) -> str | None:
    """Why the request is not authentic, or None when it is."""
    if not signature:
        return f"missing {SIGNATURE_HEADER} header"
    if not timestamp:
        return f"missing {TIMESTAMP_HEADER} header"
    # ASCII digits only: int() would also take other scripts' digits, signs and underscores
    if not (timestamp.strip().isascii() and timestamp.strip().isdigit()):
        return f"{TIMESTAMP_HEADER} is not Unix seconds"
    if abs((now if now is not None else time.time()) - int(timestamp)) > MAX_AGE_SECONDS:
        return f"{TIMESTAMP_HEADER} is more than {MAX_AGE_SECONDS} s from now (stale or replayed request)"
    if not signature.isascii():  # compare_digest refuses non-ASCII strings with a TypeError
        return f"{SIGNATURE_HEADER} is not sha256= and hex digits"
    if not hmac.compare_digest(sign(secret, timestamp, body).encode(), signature.strip().encode()):
        return "signature does not match"
    return None


def delivery_key(signature: str) -> str:
    """The key a verified signature is recorded under: SHA-256 (hex) of the header's value."""
    return hashlib.sha256(signature.strip().encode()).hexdigest()


def _remember(signature: str, ref: TriggerRef, timestamp: str) -> bool:
    """Record a verified signature in the store; False when it was already there (a replay)."""
    from flows.store import webhook_deliveries

    # Kept a second window beyond the timestamp's own: a host whose clock runs ahead purges a
    # row that another host, whose clock is right, would still accept the replay of.
    expires = datetime.fromtimestamp(int(timestamp) + 2 * MAX_AGE_SECONDS, UTC)
    return webhook_deliveries.remember(delivery_key(signature), ref.definition, expires)


def _forget(signature: str, ref: TriggerRef) -> None:
    """Drop the record of a request whose run did not start, so its sender may send it again."""
    from flows.store import webhook_deliveries

    try:
        webhook_deliveries.forget(delivery_key(signature))
    except Exception:  # noqa: BLE001 - the answer is already an error; say why a retry may be refused
        log.exception("webhook %s: the request started nothing, but its signature stays recorded "
                      "(the same request again is refused as a replay; sign it again)", ref.name)


def _reveal(name: str) -> str:
    from flows.secrets import reveal

    return reveal(name)


def _start(ref: TriggerRef, inputs: dict[str, Any]) -> Any:
    from flows.runs import start_background

    return start_background(ref.definition, inputs, started_by=ref.acting_user, trigger="webhook")


def _paused(ref: TriggerRef) -> bool:
    from flows.store import triggers as trigger_store

    if not ref.trigger.enabled:
        return True
    return any(s.trigger_index == ref.index and s.paused for s in trigger_store.list_trigger_states(ref.definition))


class WebhookServer:
    """The HTTP server of a set of webhook triggers (``start()`` runs it in a thread)."""

    def __init__(self, refs: list[TriggerRef], *, host: str = "127.0.0.1", port: int = DEFAULT_PORT,
                 reveal: Callable[[str], str] = _reveal, start: Callable[[TriggerRef, dict], Any] = _start) -> None:
        self.routes = {_norm(r.trigger.path): r for r in refs if r.kind == "webhook"}
        self._reveal, self._start_run = reveal, start
        self.httpd = ThreadingHTTPServer((host, port), self._handler())
        self.httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host.decode() if isinstance(host, bytes) else host}:{port}"

    def start(self) -> WebhookServer:
        self._thread = threading.Thread(target=self.httpd.serve_forever, name="ergon-webhooks", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    # ------------------------------------------------------------------ one request
    def handle(self, path: str, headers: Any, body: bytes) -> tuple[int, dict[str, Any]]:
        """(HTTP status, JSON answer) for a POST of ``body`` to ``path``."""
        from flows.runs import StartRefused

        ref = self.routes.get(_norm(path))
        if ref is None:
            return 404, {"error": f"no webhook trigger at {path}"}
        try:
            secret = self._reveal(ref.trigger.secret)
        except LookupError as exc:  # SecretNotFound: an operator's mistake, not the caller's
            log.error("webhook %s: %s", ref.name, exc)
            return 500, {"error": "the webhook's secret is not configured on the server"}
        timestamp, signature = headers.get(TIMESTAMP_HEADER), headers.get(SIGNATURE_HEADER)
        problem = verify(secret, timestamp, signature, body)
        if problem:
            log.warning("webhook %s refused: %s", ref.name, problem)
            return 401, {"error": problem}
        if _paused(ref):
            return 409, {"error": f"trigger {ref.name} is paused or disabled"}
        try:
            payload = json.loads(body) if body.strip() else {}
        except ValueError as exc:
            return 400, {"error": f"the body is not JSON: {exc}"}
        except RecursionError:
            return 400, {"error": "the body is not JSON: nested too deeply"}
        if not isinstance(payload, dict):
            return 400, {"error": "the body must be a JSON object (its fields are merged over the trigger's input)"}
        assert timestamp is not None and signature is not None, "verify() accepts no request without them"
        if not _remember(signature, ref, timestamp):
            return 401, {"error": "this signed request was already received (replay)"}
        try:
            started = self._start_run(ref, {**ref.trigger.input, **payload})
        except StartRefused as exc:
            _forget(signature, ref)
            return 422, {"error": "invalid inputs", "problems": [p.as_dict() for p in exc.problems]}
        except BaseException:
            _forget(signature, ref)  # nothing started: the sender retries on the error answer
            raise
        try:
            _note_run(ref, started.run_id)
        except Exception:  # noqa: BLE001 - the run started: an error answer would make the sender send it again
            log.exception("webhook %s: run %s started, but the trigger's last run could not be recorded",
                          ref.name, started.run_id)
        log.info("webhook %s: run %s started %s", ref.name, started.run_id, started.where)
        return 202, {"run_id": started.run_id, "definition": ref.definition, "trigger": ref.name,
                     "deployment": started.deployment, "work_pool": started.work_pool,
                     "flow_run_id": started.flow_run_id}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            server_version = "ergon-webhooks"

            timeout = REQUEST_TIMEOUT_SECONDS  # a sender that stalls holds a thread no longer

            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                try:
                    length = body_length(self.headers)
                    body = self._read_body(length)
                except Refused as refused:
                    self.close_connection = True  # the unread rest must not be taken for a request
                    self._answer(refused.status, {"error": str(refused)})
                    return
                try:
                    status, answer = server.handle(self.path, self.headers, body)
                except Exception:  # keep serving; the log says what broke, the caller learns nothing inside
                    log.exception("webhook %s failed", self.path)
                    status, answer = 500, {"error": "the server failed to handle the request (its log says why)"}
                self._answer(status, answer)

            def _read_body(self, length: int) -> bytes:
                try:
                    body = self.rfile.read(length) if length else b""
                except TimeoutError:
                    raise Refused(408, f"the body did not arrive within {REQUEST_TIMEOUT_SECONDS} s") from None
                if len(body) < length:
                    raise Refused(400, f"the body has {len(body)} bytes, its Content-Length says {length}")
                return body

            def do_GET(self) -> None:  # noqa: N802
                self._answer(405, {"error": "webhooks take POST"})

            def _answer(self, status: int, answer: dict[str, Any]) -> None:
                data = json.dumps(answer).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError as exc:  # the sender hung up: nobody is left to answer
                    log.info("webhook %s: answer %s not delivered (%s)", self.path, status, exc)

            def log_message(self, fmt: str, *args: Any) -> None:
                log.info("%s %s", self.address_string(), fmt % args)

        return Handler


class Refused(Exception):
    """A request refused for the way its body is sent, before any of it is handled: the HTTP
    status and the one-sentence reason."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status


def body_length(headers: Any) -> int:
    """The length of the request's body, from its headers alone (nothing is read): refuses a
    chunked body (411), a Content-Length that is not a number of bytes or given twice with
    different values (400) and one over :data:`MAX_BODY_BYTES` (413). A request with neither
    header has no body (RFC 9112, 6.3)."""
    if headers.get("Transfer-Encoding") is not None:
        raise Refused(411, "send the body with a Content-Length (chunked bodies are not accepted)")
    values = {value.strip() for value in headers.get_all("Content-Length") or []}
    if not values:
        return 0
    if len(values) > 1:
        raise Refused(400, "Content-Length is given more than once with different values")
    value = values.pop()
    if not (value.isascii() and value.isdigit()):
        raise Refused(400, f"Content-Length {value!r} is not a number of bytes")
    # compared as text first: int() of thousands of digits is refused, and slow before that
    if len(value.lstrip("0")) > len(str(MAX_BODY_BYTES)) or int(value) > MAX_BODY_BYTES:
        raise Refused(413, f"body over {MAX_BODY_BYTES} bytes")
    return int(value)


def _norm(path: str) -> str:
    return "/" + path.split("?", 1)[0].strip("/")


def _note_run(ref: TriggerRef, run_id: str) -> None:
    from flows.store import triggers as trigger_store
    from flows.store.models import utcnow

    trigger_store.upsert_trigger_state(ref.definition, ref.index, kind=ref.kind, last_run_id=run_id, last_run_at=utcnow(),
                                       created_by=ref.trigger.as_user)
