"""Webhook triggers: a signed HTTP POST starts a run.

``ergon serve`` listens on 127.0.0.1 (``--webhook-port``, default 8765; put a reverse proxy with
TLS in front to expose it). A request to a trigger's ``path`` must carry:

* ``X-Ergon-Timestamp``: the time of sending, in Unix seconds;
* ``X-Ergon-Signature``: ``sha256=`` + hex HMAC-SHA256 of ``timestamp + "." + body`` keyed by the
  Ergon secret the trigger names (``ergon secrets set NAME``).

Signing the timestamp with the body, refusing timestamps more than 5 minutes away from now, and
refusing a signature already accepted in that window stop a captured request from being replayed.

Answers (JSON): ``202 {"run_id", "deployment", "work_pool", "flow_run_id"}`` — the run was
started (through the definition's deployment when it has one; the three are null when it runs
as a process on this host); ``401`` — signature or timestamp
missing, wrong, stale or replayed (nothing started); ``404`` — no webhook trigger has that
path; ``409`` — the trigger is paused or disabled; ``400`` — the body is not a JSON object;
``413`` — body over 1 MB; ``422 {"problems": [...]}`` — the inputs do not fit the definition;
``500`` — the trigger's secret is not set (the server log says which).

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
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from flows.trigger_refs import TriggerRef

SIGNATURE_HEADER = "X-Ergon-Signature"
TIMESTAMP_HEADER = "X-Ergon-Timestamp"
MAX_AGE_SECONDS = 300
MAX_BODY_BYTES = 1_000_000
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
    try:
        sent = int(timestamp)
    except ValueError:
        return f"{TIMESTAMP_HEADER} is not Unix seconds"
    if abs((now if now is not None else time.time()) - sent) > MAX_AGE_SECONDS:
        return f"{TIMESTAMP_HEADER} is more than {MAX_AGE_SECONDS} s from now (stale or replayed request)"
    if not hmac.compare_digest(sign(secret, timestamp, body), signature.strip()):
        return "signature does not match"
    return None


class _SeenSignatures:
    """Signatures accepted in the last ``MAX_AGE_SECONDS``: the same request twice is a replay."""

    def __init__(self) -> None:
        self._seen: dict[str, float] = {}
        self._lock = threading.Lock()

    def add(self, signature: str) -> bool:
        """Remember ``signature``; False if it was already there."""
        now = time.monotonic()
        with self._lock:
            for key, at in list(self._seen.items()):
                if now - at > 2 * MAX_AGE_SECONDS:
                    del self._seen[key]
            if signature in self._seen:
                return False
            self._seen[signature] = now
            return True


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
        self._seen = _SeenSignatures()
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
        problem = verify(secret, headers.get(TIMESTAMP_HEADER), headers.get(SIGNATURE_HEADER), body)
        if problem:
            log.warning("webhook %s refused: %s", ref.name, problem)
            return 401, {"error": problem}
        if _paused(ref):
            return 409, {"error": f"trigger {ref.name} is paused or disabled"}
        try:
            payload = json.loads(body) if body.strip() else {}
        except ValueError as exc:
            return 400, {"error": f"the body is not JSON: {exc}"}
        if not isinstance(payload, dict):
            return 400, {"error": "the body must be a JSON object (its fields are merged over the trigger's input)"}
        if not self._seen.add(headers.get(SIGNATURE_HEADER).strip()):
            return 401, {"error": "this signed request was already received (replay)"}
        try:
            started = self._start_run(ref, {**ref.trigger.input, **payload})
        except StartRefused as exc:
            return 422, {"error": "invalid inputs", "problems": [p.as_dict() for p in exc.problems]}
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

            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                length = int(self.headers.get("Content-Length") or 0)
                if length > MAX_BODY_BYTES:
                    self._answer(413, {"error": f"body over {MAX_BODY_BYTES} bytes"})
                    return
                body = self.rfile.read(length) if length else b""
                try:
                    status, answer = server.handle(self.path, self.headers, body)
                except Exception as exc:  # keep serving; say what broke
                    log.exception("webhook %s failed", self.path)
                    status, answer = 500, {"error": f"{type(exc).__name__}: {exc}"}
                self._answer(status, answer)

            def do_GET(self) -> None:  # noqa: N802
                self._answer(405, {"error": "webhooks take POST"})

            def _answer(self, status: int, answer: dict[str, Any]) -> None:
                data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, fmt: str, *args: Any) -> None:
                log.info("%s %s", self.address_string(), fmt % args)

        return Handler


def _norm(path: str) -> str:
    return "/" + path.split("?", 1)[0].strip("/")


def _note_run(ref: TriggerRef, run_id: str) -> None:
    from flows.store import triggers as trigger_store
    from flows.store.models import utcnow

    trigger_store.upsert_trigger_state(ref.definition, ref.index, kind=ref.kind, last_run_id=run_id, last_run_at=utcnow(),
                                       created_by=ref.trigger.as_user)
