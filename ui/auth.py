"""Who is using the dashboard: sign-in with the users of ``ergon users`` (scrypt passwords).

Rules, and the setting that changes them:

* **Acting always needs a signed-in user**: answering or taking a task, starting, replaying,
  resuming or cancelling a run. The user is who the store records (``answered_by``,
  ``started_by``), and :mod:`flows.humans` decides what they may do.
* **Viewing is open by default.** ``ERGON_UI_REQUIRE_LOGIN=1`` (also ``true``/``yes``/``on``)
  makes every page ask for a sign-in first.
* The task inbox lists only the tasks the signed-in user may see (assignee, group member,
  unassigned, admin), so it asks for a sign-in either way.

The sign-in is the browser's: an HTTP-only session cookie set by the sign-in form
(``ui/web.py``, ``ui/session.py``), so it holds across reloads, tabs and deep links until it
expires or the person signs out. Every script run checks the cookie again (signature, expiry,
not revoked; at most every :data:`RECHECK_SECONDS` within one browser session), and the
user's groups and admin flag are read again too, so a change made with ``ergon users``, or a
sign-out in another tab, applies at once.

AppTest cannot send cookies: page tests put a real token (from :func:`ui.session.issue`) in
``st.session_state[TEST_TOKEN_KEY]``, and it is checked exactly like the cookie. Nothing in the
dashboard writes that key, and a browser cannot set session state.
"""

from __future__ import annotations

import os
import time
from urllib.parse import urlencode, urlsplit

import streamlit as st

from ui import session, web

REQUIRE_LOGIN_ENV = "ERGON_UI_REQUIRE_LOGIN"
TEST_TOKEN_KEY = "ergon_session_token"
RECHECK_SECONDS = 2.0
_CHECKED_KEY = "_ergon_signed_in"


def viewing_requires_login() -> bool:
    return os.environ.get(REQUIRE_LOGIN_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def _token() -> str | None:
    cookie = st.context.cookies.get(session.COOKIE)
    if not isinstance(cookie, str):  # AppTest's session has no client: its cookies are stand-ins
        cookie = None
    return cookie or st.session_state.get(TEST_TOKEN_KEY)


def user_name() -> str | None:
    """The signed-in user's name, or None."""
    token = _token()
    if not token:
        return None
    checked = st.session_state.get(_CHECKED_KEY)
    if checked and checked[0] == token and time.monotonic() - checked[2] < RECHECK_SECONDS:
        return checked[1]
    name = session.user_of(token)
    st.session_state[_CHECKED_KEY] = (token, name, time.monotonic())
    return name


def current_actor():
    """The signed-in user as :class:`flows.humans.Actor` (groups, admin), or None."""
    from flows import humans

    name = user_name()
    return humans.actor(name) if name else None


def here() -> str:
    """This page's path and query string, to come back to after signing in or out."""
    try:
        path = urlsplit(st.context.url or "").path or "/"
    except ValueError:  # the URL is what the browser says it is: "http://[" is no page of ours
        path = "/"
    query = urlencode(st.query_params.to_dict())
    return path + (f"?{query}" if query else "")


def sidebar() -> None:
    """A sign-in link, or who is signed in and a sign-out button, in the sidebar. Both are plain
    HTML (a link, a form posted to ``ui/web.py``): only an HTTP response can set the cookie."""
    back = here()
    with st.sidebar:
        who = current_actor()
        if who is not None:
            groups = ", ".join(sorted(who.groups)) or "no group"
            st.markdown(f"Signed in as **{who.name}**" + (" (admin)" if who.is_admin else "") + f"  \n{groups}")
            st.html(f'<form method="post" action="{web.SIGN_OUT}" class="ergon-sign-out">'
                    f'<input type="hidden" name="next" value="{_attr(back)}">'
                    f'<button type="submit" style="{_BUTTON}">Sign out</button></form>')
            return
        st.html(f'<a href="{web.SIGN_IN}?{urlencode({"next": back})}" style="{_BUTTON} text-decoration:none;'
                f'display:inline-block">Sign in</a> <span style="font-size:.85rem;opacity:.7">(approvers)</span>')


_BUTTON = ("font: inherit; font-size: .9rem; padding: .3rem .85rem; border-radius: .5rem; cursor: pointer; "
           "border: 1px solid rgba(49,51,63,.2); background: #fff; color: rgb(49,51,63);")


def _attr(text: str) -> str:
    import html

    return html.escape(text, quote=True)


def require_user(doing: str) -> str | None:
    """The signed-in user's name; otherwise say that ``doing`` needs a sign-in and return None."""
    name = user_name()
    if name is None:
        st.info(f"Sign in (in the sidebar) to {doing}.", icon=":material/lock:")
    return name
