"""A scriptable OpenAI-compatible server for the LLM-layer tests: chat completions and embeddings (stdlib only).

The tests talk to it over real HTTP through litellm (``openai/<name>`` with ``api_base`` =
:attr:`FakeOpenAI.url`), so they exercise the same code path as a hosted provider.

Each model name has a queue of behaviours, consumed one per request; when the queue is empty
the server answers with its default (JSON valid against the requested ``json_schema`` when one
is sent, else a short text). A behaviour is a dict:

* ``{"status": 429}`` / ``{"status": 500}``: an OpenAI-style error with that status;
* ``{"content": "..."}``: that text; ``{"json": {...}}``: that value serialized;
* ``{"tool_calls": [{"name": "t", "arguments": {...}}]}``: a tool-call message;
* ``{"embeddings": [[...], ...]}``: these vectors for a ``/embeddings`` request;
* ``{"body": "...", "content_type": "text/html"}``: that raw body with status 200 (an HTML error
  page, a truncated JSON text); ``{"choices": []}``: a completion with that ``choices`` list;
* any of them with ``"delay": seconds`` (a fixed latency before answering).

:meth:`FakeOpenAI.respond` gives a model a *responder* instead: a function of the request body
returning one of these behaviours, asked whenever the model's queue is empty — for a conversation
whose turns depend on what arrives when (an agent waiting for its workstreams).

Both endpoints take behaviours from the same queue of a model name, so a test that chats and
embeds at once gives the two different model names. ``/embeddings`` answers by default with a vector per input: the offline embedder's, at the
request's ``dimensions`` or :data:`EMBEDDING_DIMENSIONS` (not the offline embedder's own size, so
a test can tell the server's vectors from the offline ones), as floats or, when the request asks
for ``encoding_format: base64``, as base64 little-endian float32 (what OpenAI sends).

Every request is logged (:attr:`FakeOpenAI.requests`: model, parsed body, raw body text,
headers, and the status answered) so tests can assert what was sent — for example that a secret
never appears in a request body.
"""

from __future__ import annotations

import base64
import json
import struct
import threading
import time
from collections import defaultdict, deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Received:
    """One request the server received."""

    model: str
    body: dict[str, Any]
    text: str
    headers: dict[str, str]  # names lower-cased
    status: int = 200


@dataclass
class FakeOpenAI:
    """The server's state; :meth:`start` serves it on 127.0.0.1 on a free port."""

    scripts: dict[str, deque] = field(default_factory=lambda: defaultdict(deque))
    responders: dict[str, Any] = field(default_factory=dict)
    requests: list[Received] = field(default_factory=list)
    latency: float = 0.0
    _server: ThreadingHTTPServer | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        assert self._server is not None, "server not started"
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def script(self, model: str, *behaviours: dict[str, Any]) -> None:
        """Queue behaviours for requests to ``model`` (the name after ``openai/``)."""
        with self._lock:
            self.scripts[model].extend(behaviours)

    def respond(self, model: str, responder: Any) -> None:
        """Answer requests to ``model`` with ``responder(body)`` (a behaviour) when its queue is empty."""
        with self._lock:
            self.responders[model] = responder

    def for_model(self, model: str) -> list[Received]:
        return [r for r in self.requests if r.model == model]

    def reset(self) -> None:
        with self._lock:
            self.scripts.clear()
            self.responders.clear()
            self.requests.clear()
        self.latency = 0.0

    def start(self) -> FakeOpenAI:
        state = self

        class Handler(_Handler):
            fake = state

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, name="fake-openai", daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def _next(self, model: str, body: dict[str, Any]) -> dict[str, Any] | None:
        with self._lock:
            queue = self.scripts.get(model)
            if queue:
                return queue.popleft()
            responder = self.responders.get(model)
        return responder(body) if responder is not None else None


class _Handler(BaseHTTPRequestHandler):
    fake: FakeOpenAI
    protocol_version = "HTTP/1.1"
    # Headers and body go out in separate writes; without this each call stalls ~40 ms on
    # delayed ACKs (see the libraries probe notes).
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass  # keep test output clean

    def do_GET(self) -> None:  # noqa: N802 - stdlib name
        if self.path.rstrip("/").endswith("/models"):
            self._send(200, {"object": "list", "data": []})
        else:
            self._send(404, {"error": {"message": "not found"}})

    def do_POST(self) -> None:  # noqa: N802 - stdlib name
        length = int(self.headers.get("Content-Length") or 0)
        text = self.rfile.read(length).decode("utf-8")
        try:
            body = json.loads(text or "{}")
        except json.JSONDecodeError:
            self._send(400, {"error": {"message": "body is not JSON"}})
            return
        model = str(body.get("model", ""))
        behaviour = self.fake._next(model, body) or {}
        delay = behaviour.get("delay", self.fake.latency)
        if delay:
            time.sleep(delay)
        status = int(behaviour.get("status", 200))
        self.fake.requests.append(Received(model, body, text, {k.lower(): v for k, v in self.headers.items()}, status))
        if status != 200:
            message = f"scripted {status}"
            if status == 401:  # like OpenAI, echo the key back: the gateway must scrub it
                message = f"Incorrect API key provided: {self.headers.get('Authorization', '')[7:]}"
            error = {"error": {"message": message, "type": "server_error" if status >= 500 else "rate_limit",
                               "code": str(status)}}
            self._send(status, error, headers={"Retry-After": "0"} if status == 429 else None)
            return
        if "body" in behaviour:
            raw = str(behaviour["body"]).encode("utf-8")
            self.send_response(200)
            self.send_header("Content-Type", behaviour.get("content_type", "application/json"))
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)
        elif self.path.rstrip("/").endswith("/embeddings"):
            self._send(200, _embeddings(model, body, behaviour))
        else:
            self._send(200, _completion(model, body, behaviour))

    def _send(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)


def _completion(model: str, body: dict[str, Any], behaviour: dict[str, Any]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": None}
    finish = "stop"
    if "tool_calls" in behaviour:
        message["tool_calls"] = [
            {"id": f"call_{i}", "type": "function",
             "function": {"name": call["name"], "arguments": json.dumps(call.get("arguments", {}))}}
            for i, call in enumerate(behaviour["tool_calls"])
        ]
        finish = "tool_calls"
    elif "json" in behaviour:
        message["content"] = json.dumps(behaviour["json"])
    elif "content" in behaviour:
        message["content"] = behaviour["content"]
    else:
        message["content"] = _default_content(body)
    prompt_chars = sum(len(str(m.get("content") or "")) for m in body.get("messages", []))
    completion_chars = len(message["content"] or json.dumps(message.get("tool_calls")))
    prompt_tokens, completion_tokens = max(1, prompt_chars // 4), max(1, completion_chars // 4)
    return {
        "id": "chatcmpl-fake", "object": "chat.completion", "created": int(time.time()), "model": model,
        "choices": behaviour.get("choices", [{"index": 0, "message": message, "finish_reason": finish}]),
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens},
    }


#: Dimensions of the server's default embeddings.
EMBEDDING_DIMENSIONS = 64


def _embeddings(model: str, body: dict[str, Any], behaviour: dict[str, Any]) -> dict[str, Any]:
    from flows.llm.offline_embedding import embed_offline

    inputs = body.get("input")
    texts = [inputs] if isinstance(inputs, str) else [str(t) for t in inputs or []]
    dimensions = int(body.get("dimensions") or EMBEDDING_DIMENSIONS)
    vectors = behaviour.get("embeddings") or [embed_offline(t, dimensions) for t in texts]

    def encoded(vector: list[float]) -> Any:
        if body.get("encoding_format") == "base64":
            return base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode("ascii")
        return vector

    tokens = max(1, sum(len(t) for t in texts) // 4)
    return {"object": "list", "model": model,
            "data": [{"object": "embedding", "index": i, "embedding": encoded(v)} for i, v in enumerate(vectors)],
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}


def _default_content(body: dict[str, Any]) -> str:
    fmt = body.get("response_format") or {}
    if fmt.get("type") == "json_schema":
        from flows.llm.offline import example_for_schema

        return json.dumps(example_for_schema(fmt["json_schema"].get("schema") or {}, seed="fake"))
    return "ok from fake"


#: An `environment` definition that points at a fake server: ``ENVIRONMENT.format(model=..., url=server.url)``
#: (the key is read from ``FAKE_OPENAI_KEY``, which the tests' fixtures set).
ENVIRONMENT = """
kind: environment
name: fake
models:
  - {{model: openai/{model}, api_base: "{url}", api_key: "env:FAKE_OPENAI_KEY"}}
"""
