"""The dashboard's sign-in against a hostile client, on real dashboard processes (`ergon ui`'s
Streamlit command) and a real store, over real HTTP.

* A cookie, ``Origin`` or ``Host`` that is not what a browser would send (characters outside
  ASCII, digits of other scripts, a part thousands of characters long, an ``Origin`` that is not
  a URL) is answered as an unsigned-in or cross-site request, never a server error.
* ``ERGON_UI_SESSION_HOURS`` out of its range (0 < hours ≤ 8760), not a number, ``inf`` or
  ``nan`` stops ``ergon ui`` — and a dashboard server started without it — before it serves, with
  one sentence naming the variable and the range; the longest allowed lifetime signs in.
* Wrong passwords are throttled per user name and per client address, in the store, so every
  dashboard process on it counts the same attempts: the attempt after the limit is a 429 with
  ``Retry-After`` even with the right password, a burst of simultaneous guesses gets no more
  than the limit through, and a person's own typos are forgotten when they sign in.
* Bodies over the limit are refused with 413 before they are read — a declared 50 MB body while
  only its first bytes were sent, a chunked body that never declares its length — and malformed
  forms with 400.

The dashboard trusts ``X-Forwarded-For`` from 127.0.0.1 (uvicorn's default trusted proxy), which
is how these tests come from several addresses. Requests with malformed headers are written
byte by byte on a socket: HTTP client libraries refuse to send them.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlencode, urlsplit

import httpx
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ui"))

from dashboard_server import dashboard, dashboard_store, free_port  # noqa: E402

SIGN_IN = "/_ergon/sign-in"
SIGN_OUT = "/_ergon/sign-out"


@pytest.fixture(scope="module")
def env(migrated_template, tmp_path_factory):
    """A store shared by this module's tests and its dashboard processes (alice / wonderland)."""
    with dashboard_store(tmp_path_factory.mktemp("dashboard-faults"), migrated_template, {}) as folder:
        yield folder


@pytest.fixture(scope="module")
def server(env):
    with dashboard(env) as url:
        yield url


@pytest.fixture(scope="module")
def second_server(env):
    """Another dashboard process on the same store."""
    folder = env / "second"
    folder.mkdir()
    with dashboard(folder) as url:
        yield url


def _user(name: str, password: str = "right-horse") -> str:
    from flows import people

    people.add_user(name, ["legal"], password=password)
    return password


def _post(url: str, path: str, fields: dict[str, str], *, address: str = "10.9.9.9", **headers: str) -> httpx.Response:
    return httpx.post(url + path, content=urlencode(fields),
                      headers={"content-type": "application/x-www-form-urlencoded", "x-forwarded-for": address, **headers},
                      follow_redirects=False, timeout=30)


def _sign_in(url: str, name: str, password: str, address: str = "10.9.9.9") -> httpx.Response:
    return _post(url, SIGN_IN, {"name": name, "password": password, "next": "/"}, address=address)


def _raw(url: str, head: bytes, body: bytes | list[bytes] = b"", *, timeout: float = 10) -> tuple[int, bytes, float]:
    """Write a request on a socket (``body`` in pieces, stopping when the server hangs up) and
    read the answer: (status, the whole answer, seconds until it came)."""
    parts = urlsplit(url)
    started = time.monotonic()
    with socket.create_connection((parts.hostname, parts.port), timeout=timeout) as s:
        s.sendall(head)
        for piece in body if isinstance(body, list) else [body]:
            try:
                s.sendall(piece)
            except OSError:  # the server answered and closed without reading the rest: the point
                break
        answer = b""
        try:
            while b"\r\n\r\n" not in answer or len(answer) < answer.index(b"\r\n\r\n") + 4 + _length(answer):
                chunk = s.recv(65536)
                if not chunk:
                    break
                answer += chunk
        except ConnectionResetError:
            pass
    assert answer.startswith(b"HTTP/1.1 "), answer[:200]
    return int(answer.split(b" ", 2)[1]), answer, time.monotonic() - started


def _length(answer: bytes) -> int:
    for line in answer.split(b"\r\n\r\n", 1)[0].split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value.strip())
    return 0


def _head(url: str, method: str, path: str, *lines: str | bytes) -> bytes:
    host = urlsplit(url).netloc
    text = [f"{method} {path} HTTP/1.1".encode(), f"Host: {host}".encode(),
            *(line if isinstance(line, bytes) else line.encode() for line in lines)]
    return b"\r\n".join(text) + b"\r\n\r\n"


# --- hostile headers -------------------------------------------------------------------------


@pytest.mark.parametrize("cookie", [
    "ergon_session=v1.abc.4102444800.\u00e9\u00e9\u00e9".encode("utf-8"),  # the probe's: UTF-8 bytes
    "ergon_session=v1.abc.4102444800.\u00e9".encode("latin-1"),
], ids=["utf8", "latin1"])
def test_a_forged_cookie_with_any_bytes_signs_out_nobody_and_is_no_error(server, cookie):
    from ui import session

    token, _ = session.issue("alice")
    status, answer, _ = _raw(server, _head(server, "POST", SIGN_OUT, b"Cookie: " + cookie,
                                           "Content-Type: application/x-www-form-urlencoded", "Content-Length: 6"),
                             b"next=/")
    assert status == 303, answer[:300]
    assert session.user_of(token) == "alice"


def test_the_session_reader_refuses_tokens_of_any_shape_but_its_own():
    from ui import session

    for forged in ("v1.abc.4102444800.\u00e9\u00e9", "v1.abc.\u00b2\u00b2.x",  # "²".isdigit(), yet int("²") fails
                   "v1.abc.\u0663\u0663." + "A" * 43,  # Arabic-Indic digits
                   "v1.abc." + "9" * 5000 + "." + "A" * 43,  # longer than int() takes
                   "v1.a.b.c.d", "\x00", "\udcff"):
        assert session.user_of(forged) is None, forged


def test_an_origin_or_host_that_is_not_a_url_is_refused_not_an_error(server):
    _user("hedda")
    cross = _post(server, SIGN_IN, {"name": "hedda", "password": "right-horse"}, address="10.1.0.1", origin="http://[")
    assert cross.status_code == 403 and "set-cookie" not in cross.headers
    status, answer, _ = _raw(server, _head(server, "POST", SIGN_IN, "X-Forwarded-For: 10.1.0.1",
                                           "Content-Type: application/x-www-form-urlencoded",
                                           "Content-Length: 34").replace(f"Host: {urlsplit(server).netloc}".encode(),
                                                                         b"Host: [::1"),
                             b"name=hedda&password=right-horse&x=")
    assert status == 303 and b"ergon_session=" in answer, answer[:300]


# --- the session lifetime setting ------------------------------------------------------------


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


@pytest.mark.parametrize("hours", ["1e9", "inf", "nan", "0", "-3", "8761", "twelve"])
def test_ergon_ui_refuses_to_start_with_session_hours_out_of_range(tmp_path, hours):
    env = {**os.environ, "ERGON_HOME": str(tmp_path), "ERGON_UI_SESSION_HOURS": hours}
    proc = subprocess.Popen([sys.executable, "-m", "flows.cli", "ui", "--port", str(free_port())], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        _, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        _stop(proc)
        pytest.fail(f"`ergon ui` with ERGON_UI_SESSION_HOURS={hours} started serving")
    finally:
        _stop(proc)
    assert proc.returncode == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "ERGON_UI_SESSION_HOURS" in lines[0] and "8760" in lines[0], err
    assert "Traceback" not in err


def test_a_dashboard_server_started_directly_refuses_bad_session_hours_and_takes_a_year(env, tmp_path):
    from flows.cli.ui import streamlit_command

    bad = {**os.environ, "ERGON_UI_SESSION_HOURS": "1e9"}
    proc = subprocess.Popen(streamlit_command(free_port()), env=bad, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        _stop(proc)
        pytest.fail("the dashboard server with ERGON_UI_SESSION_HOURS=1e9 started serving")
    finally:
        _stop(proc)
    assert proc.returncode != 0 and "ERGON_UI_SESSION_HOURS must be a number of hours" in out, out

    with pytest.MonkeyPatch.context() as mp:  # the longest allowed lifetime signs in
        mp.setenv("ERGON_UI_SESSION_HOURS", "8760")
        with dashboard(tmp_path) as url:
            _user("ines")
            done = _sign_in(url, "ines", "right-horse", address="10.2.0.1")
    assert done.status_code == 303 and "Max-Age=31536000" in done.headers["set-cookie"]


# --- throttling ------------------------------------------------------------------------------


def test_after_five_wrong_passwords_a_name_is_refused_even_with_the_right_one(server):
    _user("dora")
    for i in range(5):
        wrong = _sign_in(server, "dora", f"guess-{i}", address="10.3.0.1")
        assert wrong.status_code == 401, wrong.text
    locked = _sign_in(server, "dora", "right-horse", address="10.3.0.2")  # another address, the right password
    assert locked.status_code == 429 and "set-cookie" not in locked.headers
    assert 1 <= int(locked.headers["retry-after"]) <= 60
    assert "Too many failed sign-ins for this name; try again in 1 minute" in locked.text
    assert "even the right password is refused" in locked.text
    _user("edna")  # the address that guessed is not locked for other names (5 < 20)
    assert _sign_in(server, "edna", "right-horse", address="10.3.0.1").status_code == 303


def test_twenty_failures_from_one_address_lock_that_address_for_every_name(server):
    for i in range(20):
        assert _sign_in(server, f"nobody-{i}", "guess", address="10.4.0.1").status_code == 401
    _user("fay")
    locked = _sign_in(server, "fay", "right-horse", address="10.4.0.1")
    assert locked.status_code == 429 and "from this address" in locked.text and int(locked.headers["retry-after"]) > 0
    assert _sign_in(server, "fay", "right-horse", address="10.4.0.2").status_code == 303


def test_a_burst_of_simultaneous_guesses_gets_no_more_than_the_limit_through(server):
    _user("gert")
    with ThreadPoolExecutor(15) as pool:
        answers = list(pool.map(lambda i: _sign_in(server, "gert", f"guess-{i}", address=f"10.5.0.{i}").status_code,
                                range(15)))
    assert sorted(answers) == [401] * 5 + [429] * 10, answers


def test_every_dashboard_process_on_the_store_counts_the_same_failures(server, second_server):
    _user("ivo")
    for i in range(5):
        assert _sign_in(server if i % 2 else second_server, "ivo", f"guess-{i}", address="10.6.0.1").status_code == 401
    assert _sign_in(second_server, "ivo", "right-horse", address="10.6.0.1").status_code == 429
    assert _sign_in(server, "ivo", "right-horse", address="10.6.0.1").status_code == 429


def test_signing_in_forgets_the_persons_own_typos(server):
    _user("jon")
    for _ in range(2):
        for i in range(4):
            assert _sign_in(server, "jon", f"typo-{i}", address="10.7.0.1").status_code == 401
        assert _sign_in(server, "jon", "right-horse", address="10.7.0.1").status_code == 303


def test_the_wait_grows_with_each_failure_and_ends(store):
    """The policy over time, on a real store: the clock is the ``now`` each attempt is made at."""
    from flows.store import sign_in_failures
    from ui import throttle

    t0 = datetime.now(UTC)
    for i in range(5):
        assert throttle.admit("kim", "10.8.0.1", now=t0 + timedelta(seconds=i)) is None
    refused = throttle.admit("kim", "10.8.0.1", now=t0 + timedelta(seconds=30))
    assert refused is not None and refused.retry_after == 34  # a minute after the fifth failure
    assert throttle.admit("kim", "10.8.0.1", now=t0 + timedelta(seconds=65)) is None  # the sixth
    refused = throttle.admit("kim", "10.8.0.1", now=t0 + timedelta(seconds=66))
    assert refused is not None and refused.retry_after == 119 and "2 minutes" in refused.message
    late = t0 + throttle.MEMORY + timedelta(minutes=10)  # every failure has aged out
    assert throttle.admit("kim", "10.8.0.1", now=late) is None
    # aged rows are deleted by the next attempt that purges (at most once a minute per process)
    sign_in_failures._last_purge = 0.0
    assert throttle.admit("lou", "10.8.0.2", now=late) is None
    assert sign_in_failures.failures("kim") == 1 and sign_in_failures.failures() == 2


# --- bodies ----------------------------------------------------------------------------------


@pytest.mark.parametrize("path", [SIGN_IN, SIGN_OUT])
def test_a_declared_50_mb_body_is_refused_before_it_is_read(server, path):
    head = _head(server, "POST", path, "Content-Type: application/x-www-form-urlencoded",
                 f"Content-Length: {50 * 1024 * 1024}")
    status, answer, took = _raw(server, head, b"name=alice&password=" + b"x" * 1000)
    assert status == 413 and b"too large" in answer and took < 5


@pytest.mark.parametrize("path", [SIGN_IN, SIGN_OUT])
def test_a_chunked_body_is_cut_off_at_the_limit(server, path):
    head = _head(server, "POST", path, "Content-Type: application/x-www-form-urlencoded", "Transfer-Encoding: chunked")
    piece = b"x" * 8192
    chunks = [b"%x\r\n%s\r\n" % (len(piece), piece)] * 200 + [b"0\r\n\r\n"]  # 1.6 MB, never declared
    status, answer, _ = _raw(server, head, chunks)
    assert status == 413 and b"too large" in answer
    assert httpx.get(server + "/_stcore/health", timeout=10).text == "ok", "the dashboard still serves"


def test_malformed_forms_are_a_400_and_check_no_password(server):
    many = "&".join(f"f{i}=1" for i in range(1000))
    assert _post(server, SIGN_IN, {}, address="10.10.0.1").status_code == 400
    crowded = httpx.post(server + SIGN_IN, content=many, headers={"content-type": "application/x-www-form-urlencoded"},
                         timeout=30)
    assert crowded.status_code == 400 and "malformed form" in crowded.text
    empty = _sign_in(server, "alice", "", address="10.10.0.1")
    assert empty.status_code == 400 and "Enter a name and a password" in empty.text
    control = _sign_in(server, "ali\x00ce", "wonderland", address="10.10.0.1")
    assert control.status_code == 400 and "control characters" in control.text
    from flows.store import sign_in_failures

    assert sign_in_failures.failures(address="10.10.0.1") == 0

