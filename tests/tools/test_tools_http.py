"""http_request: SSRF refusals (after DNS), pinning, redirects, caps — never reaching the internet.

Refusals happen before any connection. The success paths talk to a local server made reachable
with the test-only allowlist ``ERGON_HTTP_ALLOW_HOSTS``, or to a fake transport (``send``
patched) when a public address must be simulated.
"""

from __future__ import annotations

import asyncio
import json
import socket
import time

import httpx
import pytest

import flows.tools.http as http_tool
from flows.tools.errors import ToolError, ToolFailed
from flows.tools.http import Refused, address_refusal
from flows.tools.invoke import invoke


@pytest.fixture(autouse=True)
def clean_settings(monkeypatch):
    for name in ("ERGON_HTTP_ALLOW_HOSTS", "ERGON_HTTP_RATE", "ERGON_HTTP_MAX_BYTES", "ERGON_HTTP_TIMEOUT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(http_tool, "_BUCKET", None)


def call(args):
    return asyncio.run(invoke("http_request", args))


def fake_dns(monkeypatch, table: dict[str, list[str]]):
    """Patch socket.getaddrinfo (the DNS) for the names in ``table``; returns the list of lookups."""
    real = socket.getaddrinfo
    lookups: list[str] = []

    def getaddrinfo(host, port, *args, **kwargs):
        if host in table:
            lookups.append(host)
            return [(socket.AF_INET6 if ":" in ip else socket.AF_INET, socket.SOCK_STREAM, 6, "", (ip, port))
                    for ip in table[host]]
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return lookups


def fake_transport(monkeypatch, answer=lambda request: httpx.Response(200, text="hello")):
    """Patch AsyncClient.send: record each request instead of connecting."""
    sent: list[httpx.Request] = []

    async def send(self, request, **kwargs):
        sent.append(request)
        response = answer(request)
        response.request = request
        return response

    monkeypatch.setattr(httpx.AsyncClient, "send", send)
    return sent


@pytest.mark.parametrize("address, reason", [
    ("127.0.0.1", "loopback"), ("::1", "loopback"), ("10.1.2.3", "private"), ("172.16.5.4", "private"),
    ("192.168.1.1", "private"), ("fc00::1", "private"), ("169.254.169.254", "metadata"),
    ("169.254.10.10", "link-local"), ("fe80::1", "link-local"), ("fd00:ec2::254", "metadata"),
    ("0.0.0.0", "unspecified"), ("224.0.0.1", "multicast"), ("240.0.0.1", "reserved"),
    ("100.64.0.1", "not a public"), ("::ffff:127.0.0.1", "loopback"), ("64:ff9b::a01:203", "private"),
    ("2002:7f00:1::", "loopback"),
])
def test_non_public_addresses_are_refused(address, reason):
    assert reason in address_refusal(address)


@pytest.mark.parametrize("address", ["93.184.216.34", "8.8.8.8", "2606:4700:4700::1111"])
def test_public_addresses_pass(address):
    assert address_refusal(address) is None


@pytest.mark.parametrize("url, reason", [
    ("http://127.0.0.1/", "loopback"),
    ("http://localhost:8080/admin", "loopback"),
    ("http://10.1.2.3/", "private"),
    ("http://169.254.169.254/latest/meta-data/", "metadata"),
    ("http://[::1]:9000/", "loopback"),
    ("http://2130706433/", "loopback"),  # 127.0.0.1 as one number
    ("http://metadata.google.internal/computeMetadata/v1/", "metadata service"),
    ("file:///etc/passwd", "only http and https"),
    ("ftp://example.com/", "only http and https"),
])
def test_refused_urls(url, reason, monkeypatch):
    sent = fake_transport(monkeypatch)
    with pytest.raises(Refused, match=reason):
        call({"url": url})
    assert sent == []


def test_hostname_resolving_to_loopback_is_refused(monkeypatch):
    fake_dns(monkeypatch, {"innocent.example": ["127.0.0.1"]})
    sent = fake_transport(monkeypatch)
    with pytest.raises(Refused, match="`innocent.example` resolves to 127.0.0.1 is a loopback"):
        call({"url": "https://innocent.example/"})
    assert sent == []


def test_any_private_answer_refuses_the_host(monkeypatch):
    fake_dns(monkeypatch, {"mixed.example": ["93.184.216.34", "10.0.0.5"]})
    fake_transport(monkeypatch)
    with pytest.raises(Refused, match="10.0.0.5 is a private"):
        call({"url": "http://mixed.example/"})


def test_unresolvable_host(monkeypatch):
    def fail(*args, **kwargs):
        raise socket.gaierror(-2, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", fail)
    with pytest.raises(Refused, match="cannot resolve"):
        call({"url": "http://nowhere.invalid/"})


def test_connection_is_pinned_to_the_checked_address(monkeypatch):
    """One lookup per hop; the request goes to that IP with Host and SNI kept on the name."""
    lookups = fake_dns(monkeypatch, {"public.example": ["93.184.216.34"]})
    sent = fake_transport(monkeypatch)
    result = call({"url": "https://public.example/path?q=1", "headers": {"Host": "evil", "X-A": "1"}})
    assert result["status"] == 200 and result["body"] == "hello" and result["url"] == "https://public.example/path?q=1"
    assert lookups == ["public.example"]
    (request,) = sent
    assert request.url.host == "93.184.216.34" and request.url.path == "/path"
    assert request.headers["host"] == "public.example" and request.headers["x-a"] == "1"
    assert request.extensions["sni_hostname"] == "public.example"


def test_success_against_an_allowlisted_local_server(local_server, monkeypatch):
    def handle(h):
        body = h.body()
        h.send(200, json.dumps({"path": h.path, "method": h.command, "host": h.headers["Host"],
                                "body": body.decode(), "type": h.headers.get("Content-Type")}).encode())

    port = local_server(handle)
    monkeypatch.setenv("ERGON_HTTP_ALLOW_HOSTS", f"127.0.0.1:{port}")
    result = call({"url": f"http://127.0.0.1:{port}/echo", "method": "POST", "body": {"a": 1}})
    assert result["status"] == 200 and result["ok"] and not result["truncated"]
    assert result["json"] == {"path": "/echo", "method": "POST", "host": f"127.0.0.1:{port}",
                              "body": '{"a": 1}', "type": "application/json"}
    # another port of the same host is not covered by the entry
    with pytest.raises(Refused, match="loopback"):
        call({"url": f"http://127.0.0.1:{port + 1 if port < 65535 else port - 1}/"})


def test_allowlisted_name_is_pinned_to_its_resolved_address(local_server, monkeypatch):
    port = local_server(lambda h: h.send(200, json.dumps({"host": h.headers["Host"]}).encode()))
    fake_dns(monkeypatch, {"tools.internal": ["127.0.0.1"]})
    monkeypatch.setenv("ERGON_HTTP_ALLOW_HOSTS", f"tools.internal:{port}")
    assert call({"url": f"http://tools.internal:{port}/"})["json"] == {"host": f"tools.internal:{port}"}


def test_redirects_are_checked_on_every_hop(local_server, monkeypatch):
    def handle(h):
        targets = {
            "/to-private": "http://10.1.2.3/",
            "/to-metadata": "http://169.254.169.254/latest/meta-data/",
            "/to-localhost": f"http://localhost:{h.server.server_address[1]}/ok",
            "/to-ok": "/ok",
            "/loop": "/loop",
        }
        if h.path in targets:
            h.send(302, b"", {"Location": targets[h.path]})
        else:
            h.send(200, b'{"ok": true}')

    port = local_server(handle)
    monkeypatch.setenv("ERGON_HTTP_ALLOW_HOSTS", f"127.0.0.1:{port}")
    base = f"http://127.0.0.1:{port}"
    with pytest.raises(Refused, match="10.1.2.3 is a private"):
        call({"url": f"{base}/to-private"})
    with pytest.raises(Refused, match="metadata"):
        call({"url": f"{base}/to-metadata"})
    with pytest.raises(Refused, match="`localhost` resolves to .* loopback"):
        call({"url": f"{base}/to-localhost"})
    followed = call({"url": f"{base}/to-ok"})
    assert (followed["status"], followed["json"], followed["redirects"], followed["url"]) == (200, {"ok": True}, 1, f"{base}/ok")
    with pytest.raises(ToolError, match="more than 5 redirects"):
        call({"url": f"{base}/loop"})


def test_redirect_from_a_public_address_to_a_private_one(monkeypatch):
    fake_dns(monkeypatch, {"public.example": ["93.184.216.34"], "internal.example": ["192.168.0.7"]})
    sent = fake_transport(monkeypatch, lambda r: httpx.Response(301, headers={"Location": "http://internal.example/x"}))
    with pytest.raises(Refused, match="`internal.example` resolves to 192.168.0.7"):
        call({"url": "http://public.example/", "headers": {"Authorization": "Bearer s3cret"}})
    assert len(sent) == 1


def test_credentials_dropped_on_cross_host_redirect(monkeypatch):
    fake_dns(monkeypatch, {"a.example": ["93.184.216.34"], "b.example": ["93.184.216.35"]})

    def answer(request):
        if request.headers["host"] == "a.example":
            return httpx.Response(307, headers={"Location": "http://b.example/next"})
        return httpx.Response(200, text="done")

    sent = fake_transport(monkeypatch, answer)
    assert call({"url": "http://a.example/", "headers": {"Authorization": "Bearer x", "X-Keep": "1"}})["body"] == "done"
    assert "authorization" in sent[0].headers and "authorization" not in sent[1].headers
    assert sent[1].headers["x-keep"] == "1" and sent[1].url.host == "93.184.216.35"


def test_body_is_capped(local_server, monkeypatch):
    port = local_server(lambda h: h.send(200, b"x" * 5000, {"Content-Type": "text/plain"}))
    monkeypatch.setenv("ERGON_HTTP_ALLOW_HOSTS", f"127.0.0.1:{port}")
    monkeypatch.setenv("ERGON_HTTP_MAX_BYTES", "1000")
    result = call({"url": f"http://127.0.0.1:{port}/big"})
    assert result["truncated"] is True and len(result["body"]) == 1000


def test_timeout_keeps_a_retryable_type(local_server, monkeypatch):
    port = local_server(lambda h: (time.sleep(1.0), h.send(200, b"late")))
    monkeypatch.setenv("ERGON_HTTP_ALLOW_HOSTS", f"127.0.0.1:{port}")
    monkeypatch.setenv("ERGON_HTTP_TIMEOUT", "0.2")
    with pytest.raises(ToolFailed) as info:
        call({"url": f"http://127.0.0.1:{port}/slow"})
    assert type(info.value).__name__ in ("ReadTimeout", "TimeoutError")


def test_rate_cap(monkeypatch):
    fake_dns(monkeypatch, {"public.example": ["93.184.216.34"]})
    fake_transport(monkeypatch)
    monkeypatch.setenv("ERGON_HTTP_RATE", "1")
    monkeypatch.setenv("ERGON_HTTP_TIMEOUT", "0.5")
    assert call({"url": "http://public.example/"})["status"] == 200
    with pytest.raises(ToolError, match="rate limit"):
        call({"url": "http://public.example/"})


def test_secret_headers_are_masked_in_the_record(run_ctx, monkeypatch):
    from flows.store import visits as visit_store

    fake_dns(monkeypatch, {"public.example": ["93.184.216.34"]})
    fake_transport(monkeypatch)
    call({"url": "http://public.example/", "headers": {"Authorization": "Bearer s3cret"}})
    (row,) = visit_store.tool_calls_for_run(run_ctx.run_id)
    assert row.args["headers"] == {"Authorization": "***"} and row.status == "ok"
