"""Dashboard sign-ins: the signed, expiring, revocable session token (ui/session.py) and the
sign-in / sign-out endpoints that set and clear its HTTP-only cookie (ui/web.py), over a real
store and Starlette's test client."""

from __future__ import annotations

import stat
from datetime import UTC, datetime, timedelta

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from ui import session, web


@pytest.fixture
def alice(people):
    return "alice"


def test_a_token_names_its_user_until_it_expires_or_is_revoked(alice, tmp_path):
    token, max_age = session.issue(alice)
    assert session.user_of(token) == "alice" and max_age == 12 * 3600
    assert session.user_of(token, now=datetime.now(UTC) + timedelta(hours=13)) is None, "expired"
    session.revoke(token)
    assert session.user_of(token) is None, "signed out"


def test_forged_tokens_are_refused(alice):
    token, _ = session.issue(alice)
    version, sign_in_id, expiry, signature = token.split(".")
    for forged in (f"{version}.{sign_in_id}.{int(expiry) + 3600}.{signature}", f"{version}.{sign_in_id}.{expiry}.x",
                   f"v0.{sign_in_id}.{expiry}.{signature}", "", "garbage", None):
        assert session.user_of(forged) is None, forged


def test_the_signing_key_is_a_private_file_in_ergon_home(alice):
    from flows.settings import ergon_home

    session.issue(alice)
    key = ergon_home() / "ui-session.key"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    before, _ = session.issue(alice)
    key.unlink()  # a new key voids every token signed with the old one
    assert session.user_of(before) is None


def test_next_stays_on_this_site():
    assert web.safe_next("/inbox?task=1") == "/inbox?task=1"
    for outside in ("https://evil.example/", "//evil.example", "/\\evil.example", "javascript:alert(1)", "", None):
        assert web.safe_next(outside) == "/"


def _client() -> TestClient:
    return TestClient(Starlette(routes=web.routes()), base_url="http://dash.test")


def test_sign_in_sets_an_http_only_cookie_and_sign_out_revokes_it(alice):
    client = _client()
    assert "Sign in to Ergon" in client.get(web.SIGN_IN, params={"next": "/inbox"}).text
    wrong = client.post(web.SIGN_IN, data={"name": "alice", "password": "nope", "next": "/inbox"},
                        follow_redirects=False)
    assert wrong.status_code == 401 and "Wrong name or password" in wrong.text and "set-cookie" not in wrong.headers
    done = client.post(web.SIGN_IN, data={"name": "alice", "password": "wonderland", "next": "/inbox?task=7"},
                       follow_redirects=False)
    assert done.status_code == 303 and done.headers["location"] == "/inbox?task=7"
    cookie = done.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=lax" in cookie and "Max-Age=43200" in cookie and "wonderland" not in cookie
    token = client.cookies[session.COOKIE]
    assert session.user_of(token) == "alice"

    out = client.post(web.SIGN_OUT, data={"next": "/"}, follow_redirects=False)
    assert out.status_code == 303 and session.COOKIE in out.headers["set-cookie"] and "Max-Age=0" in out.headers["set-cookie"]
    assert session.user_of(token) is None, "the sign-in is revoked, not just forgotten by this browser"


def test_posts_from_another_site_are_refused(alice):
    client = _client()
    refused = client.post(web.SIGN_IN, data={"name": "alice", "password": "wonderland"},
                          headers={"origin": "https://evil.example"}, follow_redirects=False)
    assert refused.status_code == 403 and "set-cookie" not in refused.headers
    token, _ = session.issue(alice)
    client.cookies.set(session.COOKIE, token)
    assert client.post(web.SIGN_OUT, headers={"origin": "https://evil.example"}).status_code == 403
    assert session.user_of(token) == "alice"
