"""Fixtures of the dashboard tests: the definitions they run, seeded stores, AppTest apps.

AppTest runs the app in this process against the test's store (``ERGON_DATABASE_URL`` set by
the ``store`` fixture); Streamlit's resource caches are process-wide, so each test starts with
them cleared.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ui_defs import ALL
from ui_seed import sign_in

APP = Path(__file__).resolve().parents[2] / "ui" / "app.py"


@pytest.fixture
def ui_defs(definitions):
    """The test definitions folder with review / doubler / boom written in it."""
    for name, text in ALL.items():
        (definitions / name).write_text(text)
    return definitions


@pytest.fixture
def make_app(store, ui_defs, monkeypatch):
    """make_app(user=None, **query) → an AppTest of the dashboard, signed in as ``user``."""
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    monkeypatch.delenv("ERGON_UI_REQUIRE_LOGIN", raising=False)
    st.cache_resource.clear()

    def make(user: str | None = None, **query: str) -> AppTest:
        at = AppTest.from_file(str(APP), default_timeout=60)
        if user is not None:
            sign_in(at, user)
        for key, value in query.items():
            at.query_params[key] = value
        return at

    return make


@pytest.fixture
def people(store):
    from flows import people as p

    p.add_user("alice", ["legal"], password="wonderland")
    p.add_user("bob", ["sales"], password="builder")
    p.add_user("root", admin=True, password="toor")
    return {"alice": "wonderland", "bob": "builder", "root": "toor"}
