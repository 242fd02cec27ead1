"""Who is using the dashboard: sign-in with the users of ``ergon users`` (scrypt passwords).

Rules, and the setting that changes them:

* **Acting always needs a signed-in user**: answering or taking a task, starting, replaying,
  resuming or cancelling a run. The user is who the store records (``answered_by``,
  ``started_by``), and :mod:`flows.humans` decides what they may do.
* **Viewing is open by default.** ``ERGON_UI_REQUIRE_LOGIN=1`` (also ``true``/``yes``/``on``)
  makes every page ask for a sign-in first.
* The task inbox lists only the tasks the signed-in user may see (assignee, group member,
  unassigned, admin), so it asks for a sign-in either way.

The sign-in lives in ``st.session_state`` (one browser tab's session); the user's groups and
admin flag are read again on every script run, so a change made with ``ergon users`` applies
at once.
"""

from __future__ import annotations

import os

import streamlit as st

REQUIRE_LOGIN_ENV = "ERGON_UI_REQUIRE_LOGIN"
_USER_KEY = "ergon_user"


def viewing_requires_login() -> bool:
    return os.environ.get(REQUIRE_LOGIN_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def user_name() -> str | None:
    """The signed-in user's name, or None."""
    return st.session_state.get(_USER_KEY)


def current_actor():
    """The signed-in user as :class:`flows.humans.Actor` (groups, admin), or None."""
    from flows import humans

    name = user_name()
    return humans.actor(name) if name else None


def sign_in(name: str, password: str) -> bool:
    from flows import people

    user = people.authenticate(name.strip(), password)
    if user is None:
        return False
    st.session_state[_USER_KEY] = user.name
    return True


def sign_out() -> None:
    st.session_state.pop(_USER_KEY, None)


def sidebar() -> None:
    """The sign-in form, or who is signed in and a sign-out button, in the sidebar."""
    with st.sidebar:
        who = current_actor()
        if who is not None:
            groups = ", ".join(sorted(who.groups)) or "no group"
            st.markdown(f"Signed in as **{who.name}**" + (" (admin)" if who.is_admin else "") + f"  \n{groups}")
            if st.button("Sign out", key="sign_out"):
                sign_out()
                st.rerun()
            return
        with st.form("sign_in", border=True):
            st.markdown("**Sign in** (approvers)")
            name = st.text_input("Name", key="login_name")
            password = st.text_input("Password", type="password", key="login_password")
            if st.form_submit_button("Sign in"):
                if sign_in(name, password):
                    st.rerun()
                st.error("Wrong name or password (set one with `ergon users add NAME --password-stdin`).")


def require_user(doing: str) -> str | None:
    """The signed-in user's name; otherwise say that ``doing`` needs a sign-in and return None."""
    name = user_name()
    if name is None:
        st.info(f"Sign in (in the sidebar) to {doing}.", icon=":material/lock:")
    return name
