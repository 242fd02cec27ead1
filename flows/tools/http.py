"""``http_request``: outbound HTTP for agents and tool nodes, refused for non-public addresses.

A model chooses the URL, so the URL is untrusted (SSRF). For every hop, redirects included:

1. only ``http`` and ``https``;
2. the host is resolved (``socket.getaddrinfo``) and *every* address it resolves to must be
   public: loopback, private (10/8, 172.16/12, 192.168/16, fc00::/7), link-local (169.254/16,
   fe80::/10), cloud metadata (169.254.169.254, fd00:ec2::254, metadata.google.internal, Azure's
   168.63.129.16), shared (100.64/10), multicast, unspecified and reserved addresses are
   refused, as are IPv6 forms that embed one of them (::ffff:a.b.c.d, 6to4, NAT64);
3. the connection goes to the address that was checked — the URL's host is replaced by that IP,
   with the ``Host`` header and the TLS server name (SNI, and so certificate checking) kept on
   the original name — so a second DNS answer cannot swap in a private address (DNS rebinding);
4. redirects are followed by hand (at most 5), each new location checked like the first;
   ``Authorization`` and ``Cookie`` are dropped when a redirect changes host.

The response body is read up to a cap (default 1 MB, ``truncated`` says when cut; the cap
applies after decompression), each call has a deadline (default 15 s) and the process has a
token-bucket rate cap (default 10 requests/s, burst 10).

Settings (environment, read at call time):

* ``ERGON_HTTP_MAX_BYTES``, ``ERGON_HTTP_TIMEOUT``, ``ERGON_HTTP_RATE`` — the caps above;
* ``ERGON_HTTP_ALLOW_HOSTS`` — comma-separated ``host:port`` (or ``host`` for any port) entries
  exempt from the address check (still pinned). **For tests and internal tools only**: an entry
  lets every agent reach that address.

Timeouts and connection failures are raised as they are (``invoke`` wraps them keeping their
type, so ``retry_on: [timeout]`` sees them); refusals are :class:`ToolError`.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import os
import socket
import threading
import time
from typing import Any, Literal

import httpx

from flows.tools import tool
from flows.tools.errors import ToolError

TOOL = "http_request"
DEFAULT_MAX_BYTES = 1_000_000
DEFAULT_TIMEOUT = 15.0
DEFAULT_RATE = 10.0
MAX_REDIRECTS = 5

METADATA_HOSTS = frozenset({"metadata.google.internal", "metadata.goog", "metadata"})
METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a) for a in ("169.254.169.254", "fd00:ec2::254", "168.63.129.16", "100.100.100.200")
)
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_REDIRECTS = {301, 302, 303, 307, 308}
_HOP_HEADERS = {"host", "content-length", "transfer-encoding", "connection"}
_CREDENTIAL_HEADERS = {"authorization", "cookie", "proxy-authorization"}

Method = Literal["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]


class Refused(ToolError):
    """The URL or an address it resolves to is not allowed."""

    def __init__(self, message: str):
        super().__init__(TOOL, message)

    def __reduce__(self) -> Any:
        return (type(self), (self.message,))


def _env_float(name: str, default: float) -> float:
    try:
        return float(os.environ.get(name) or default)
    except ValueError:
        return default


# ------------------------------------------------------------------------------------ addresses


def address_refusal(address: str) -> str | None:
    """Why ``address`` may not be contacted, or None when it is a public address."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])  # drop an IPv6 zone id
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = ip.ipv4_mapped or ip.sixtofour or (
            ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF) if ip in _NAT64 else None
        )
        if embedded is not None:
            reason = address_refusal(str(embedded))
            if reason:
                return f"{reason} (embedded in {ip})"
    checks = (
        (ip in METADATA_ADDRESSES, "a cloud metadata address"),
        (ip.is_loopback, "a loopback address"),
        (ip.is_link_local, "a link-local address"),
        (ip.is_unspecified, "the unspecified address"),
        (ip.is_multicast, "a multicast address"),
        (ip.is_reserved, "a reserved address"),
        (ip.is_private, "a private address"),
        (not ip.is_global, "not a public address"),
    )
    for hit, reason in checks:
        if hit:
            return f"{ip} is {reason}"
    return None


def _allowlist() -> set[tuple[str, int | None]]:
    entries: set[tuple[str, int | None]] = set()
    for raw in (os.environ.get("ERGON_HTTP_ALLOW_HOSTS") or "").split(","):
        raw = raw.strip().lower()
        if not raw:
            continue
        host, port = raw, None
        if raw.startswith("["):  # [v6]:port
            host, _, rest = raw[1:].partition("]")
            port = int(rest[1:]) if rest.startswith(":") and rest[1:].isdigit() else None
        elif raw.count(":") == 1:
            h, p = raw.split(":")
            if p.isdigit():
                host, port = h, int(p)
        entries.add((host, port))
    return entries


async def _resolve(host: str, port: int) -> list[str]:
    try:
        # socket.getaddrinfo is looked up at call time, in a thread: it blocks.
        infos = await asyncio.to_thread(socket.getaddrinfo, host, port, 0, socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise Refused(f"cannot resolve `{host}`: {exc}") from None
    addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))
    if not addresses:
        raise Refused(f"`{host}` resolves to no address")
    return addresses


async def check_url(url: httpx.URL) -> str:
    """The address to connect to for ``url``, after the checks; :class:`Refused` otherwise."""
    if url.scheme not in ("http", "https"):
        raise Refused(f"only http and https URLs are allowed, not `{url.scheme or '(none)'}`")
    host = (url.host or "").lower().rstrip(".")
    if not host:
        raise Refused("the URL has no host")
    port = url.port or (443 if url.scheme == "https" else 80)
    allowed = _allowlist()
    exempt = (host, port) in allowed or (host, None) in allowed
    if not exempt and host in METADATA_HOSTS:
        raise Refused(f"`{host}` is a cloud metadata service")
    addresses = await _resolve(host, port)
    if not exempt:
        for address in addresses:
            reason = address_refusal(address)
            if reason:
                raise Refused(f"`{host}` resolves to {reason}; only public addresses may be requested")
    return addresses[0]


# ------------------------------------------------------------------------------------ rate cap


class TokenBucket:
    """A thread-safe token bucket; :meth:`reserve` returns how long to wait for a token."""

    def __init__(self, rate: float, burst: float):
        self.rate, self.burst = max(rate, 0.001), max(burst, 1.0)
        self.tokens, self.last = self.burst, time.monotonic()
        self._lock = threading.Lock()

    def reserve(self) -> float:
        with self._lock:
            now = time.monotonic()
            self.tokens = min(self.burst, self.tokens + (now - self.last) * self.rate)
            self.last = now
            self.tokens -= 1
            return 0.0 if self.tokens >= 0 else -self.tokens / self.rate

    def give_back(self) -> None:
        with self._lock:
            self.tokens = min(self.burst, self.tokens + 1)


_BUCKET: TokenBucket | None = None


def _bucket() -> TokenBucket:
    global _BUCKET
    rate = _env_float("ERGON_HTTP_RATE", DEFAULT_RATE)
    if _BUCKET is None or _BUCKET.rate != rate:
        _BUCKET = TokenBucket(rate, burst=max(rate, 1.0))
    return _BUCKET


async def _take_token(deadline: float) -> None:
    bucket = _bucket()
    wait = bucket.reserve()
    if wait > deadline - time.monotonic():
        bucket.give_back()
        raise ToolError(TOOL, f"rate limit: at most {bucket.rate:g} requests per second; try again later")
    if wait:
        await asyncio.sleep(wait)


# ------------------------------------------------------------------------------------ the tool


def _pinned(url: httpx.URL, address: str) -> tuple[httpx.URL, str, dict[str, Any]]:
    """The URL aimed at ``address``, the Host header to send, and the request extensions (SNI)."""
    default_port = 443 if url.scheme == "https" else 80
    host_header = url.host if url.port in (None, default_port) else f"{url.host}:{url.port}"
    if ":" in url.host:  # an IPv6 literal keeps its brackets in Host
        host_header = f"[{url.host}]" + ("" if url.port in (None, default_port) else f":{url.port}")
    extensions = {"sni_hostname": url.host} if url.scheme == "https" else {}
    return url.copy_with(host=address), host_header, extensions


async def _read_capped(response: httpx.Response, cap: int) -> tuple[bytes, bool]:
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body.extend(chunk)
        if len(body) > cap:
            return bytes(body[:cap]), True
    return bytes(body), False


def _result(url: httpx.URL, response: httpx.Response, body: bytes, truncated: bool, redirects: int) -> dict:
    content_type = response.headers.get("content-type", "")
    text = body.decode(response.charset_encoding or "utf-8", errors="replace")
    out: dict[str, Any] = {
        "url": str(url), "status": response.status_code, "ok": response.is_success,
        "headers": dict(response.headers), "content_type": content_type,
        "body": text, "truncated": truncated, "redirects": redirects,
    }
    if "json" in content_type and not truncated:
        try:
            out["json"] = json.loads(text)
        except ValueError:
            pass
    return out


@tool(name=TOOL)
async def http_request(url: str, method: Method = "GET", headers: dict[str, str] | None = None,
                       body: str | dict | list | None = None) -> dict:
    """Make an HTTP request to a public address (private, loopback and metadata addresses are refused).

    Returns the status, headers and body (text; also `json` when the response is JSON). Bodies
    longer than the cap are cut and `truncated` is true.

    Args:
        url: an http or https URL
        method: GET, POST, PUT, PATCH, DELETE, HEAD or OPTIONS
        headers: request headers
        body: request body: text, or a JSON value (sent as application/json)
    """
    cap = int(_env_float("ERGON_HTTP_MAX_BYTES", DEFAULT_MAX_BYTES))
    timeout = _env_float("ERGON_HTTP_TIMEOUT", DEFAULT_TIMEOUT)
    deadline = time.monotonic() + timeout
    try:
        current = httpx.URL(url)
    except (httpx.InvalidURL, TypeError) as exc:
        raise Refused(f"invalid URL: {exc}") from None
    send_headers = {k: v for k, v in (headers or {}).items() if k.lower() not in _HOP_HEADERS}
    content: bytes | None = None
    if isinstance(body, (dict, list)):
        content = json.dumps(body).encode()
        if not any(k.lower() == "content-type" for k in send_headers):
            send_headers["Content-Type"] = "application/json"
    elif body is not None:
        content = body.encode()
    # trust_env=False: a proxy from the environment would connect on our behalf, past the pinning.
    async with asyncio.timeout(timeout), httpx.AsyncClient(
        timeout=timeout, follow_redirects=False, trust_env=False
    ) as client:
        for hop in range(MAX_REDIRECTS + 1):
            address = await check_url(current)
            await _take_token(deadline)
            target, host_header, extensions = _pinned(current, address)
            request = client.build_request(method, target, headers={**send_headers, "Host": host_header},
                                           content=content, extensions=extensions)
            response = await client.send(request, stream=True)
            try:
                location = response.headers.get("location")
                if response.status_code in _REDIRECTS and location:
                    following = current.join(location)
                    if following.host != current.host:
                        send_headers = {k: v for k, v in send_headers.items() if k.lower() not in _CREDENTIAL_HEADERS}
                    if response.status_code == 303 or (response.status_code in (301, 302) and method == "POST"):
                        method, content = "GET", None
                        send_headers = {k: v for k, v in send_headers.items() if k.lower() != "content-type"}
                    current = following
                    continue
                data, truncated = await _read_capped(response, cap)
                return _result(current, response, data, truncated, hop)
            finally:
                await response.aclose()
    raise ToolError(TOOL, f"more than {MAX_REDIRECTS} redirects")
