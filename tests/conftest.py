"""Test-session setup shared by every test package.

Prefect reads its settings when it is first imported, so the session's Prefect API URL and
Ergon home are fixed here, at collection time, before any test module imports prefect: a free
port is reserved for a real local Prefect server, which the ``prefect_api`` fixture starts only
when a test needs it (compiler-only runs never pay for it).
"""

from __future__ import annotations

import atexit
import os
import shutil
import socket
import sys
import tempfile
from pathlib import Path

import pytest

_SESSION_HOME = Path(tempfile.mkdtemp(prefix="ergon-test-"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


if not os.environ.get("ERGON_TEST_KEEP_ENV"):
    os.environ["ERGON_HOME"] = str(_SESSION_HOME)
    os.environ.pop("ERGON_DATABASE_URL", None)
    for _identity in ("ERGON_USER", "ERGON_TOKEN"):  # tests say whom they act as
        os.environ.pop(_identity, None)
    _PORT = int(os.environ.get("ERGON_TEST_PREFECT_PORT") or _free_port())
    os.environ["PREFECT_API_URL"] = f"http://127.0.0.1:{_PORT}/api"
    # Prefect's client home (its profiles): the developer's own profile must not change what the
    # tests see. The tests of a user's first steps set no PREFECT_* at all (tests/packaging).
    os.environ["PREFECT_HOME"] = str(_SESSION_HOME / "prefect-client")
    os.environ["LITELLM_OFFLINE_MODE"] = "true"

from flows.prefect.config import configure_prefect_env  # noqa: E402

configure_prefect_env()


@pytest.fixture(scope="session")
def prefect_api():
    """A real local Prefect server (started once per session, stopped at the end)."""
    from flows.prefect import server

    port = int(os.environ["PREFECT_API_URL"].rsplit(":", 1)[1].split("/")[0])
    already = server.healthy(os.environ["PREFECT_API_URL"])
    if not already:
        url = os.environ.pop("PREFECT_API_URL")
        try:
            info = server.start(port)
        finally:
            os.environ["PREFECT_API_URL"] = url
        assert info.url == url, f"the test server came up at {info.url}, expected {url}"
    yield os.environ["PREFECT_API_URL"]
    if not already:
        # Stop it at interpreter exit, not now: Prefect drains its log and event queues in the
        # threading shutdown hooks, which run before atexit handlers; a server stopped earlier
        # leaves that drain retrying against a dead address (the test process then hangs).
        atexit.register(server.stop)


@pytest.fixture(scope="session")
def migrated_template(tmp_path_factory) -> Path:
    """An SQLite store migrated once per session; tests copy it (migrating costs ~0.5 s)."""
    from flows.store import db

    folder = tmp_path_factory.mktemp("store-template")
    url = f"sqlite:///{folder / 'ergon.db'}"
    db.init_db(url)
    db.dispose_all()  # closes the connections, which checkpoints the WAL into the file
    return folder / "ergon.db"


@pytest.fixture
def store(tmp_path, monkeypatch, migrated_template):
    """A fresh, migrated Ergon store in a temporary SQLite file."""
    from flows.store import db

    shutil.copy(migrated_template, tmp_path / "ergon.db")
    url = f"sqlite:///{tmp_path / 'ergon.db'}"
    monkeypatch.setenv("ERGON_DATABASE_URL", url)
    db.init_db(url)
    yield url
    db.dispose_all()


class Tokens(dict):
    """``tokens["lea"]``: a personal token of lea, made (with the user, when new) on first use —
    what a test gives as ``--token`` or ``ERGON_TOKEN`` to act as lea. ``tokens.admin`` is the
    token of an admin (``root``, made the store's first admin when it has none)."""

    def __missing__(self, name: str) -> str:
        from flows import people, tokens
        from flows.store import people as people_store

        if people_store.get_user(name) is None:
            people.add_user(name)
        token = self[name] = tokens.create(name, label="test").token
        return token

    @property
    def admin(self) -> str:
        from flows.store import people as people_store

        if "root" not in self and people_store.admin_count() == 0:
            people_store.create_first_admin("root", password_hash=None)
        return self["root"]


@pytest.fixture
def tokens(store) -> Tokens:
    """Personal tokens of the test's people, in the test's store (see :class:`Tokens`)."""
    return Tokens()


# ---------------------------------------------------------------- running definitions
TOOLS = Path(__file__).parent / "runtime" / "tools"
sys.path.insert(0, str(TOOLS))


@pytest.fixture
def definitions(tmp_path, monkeypatch):
    """An empty definitions folder (with the test tools) that the catalog reads."""
    folder = tmp_path / "definitions"
    shutil.copytree(TOOLS, folder / "tools", ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setenv("ERGON_DEFINITIONS", str(folder))
    ledger = Path(os.environ["ERGON_HOME"]) / "ledger"
    shutil.rmtree(ledger, ignore_errors=True)
    return folder


@pytest.fixture
def run_def(prefect_api, store, definitions):
    """run_def({"file.yaml": text, ...}, name, inputs) → the run's result dict."""
    from flows import runs
    from flows.catalog import Catalog

    def run(files: dict[str, str], name: str, inputs: dict | None = None, *, mutate=None, **kw) -> dict:
        """``mutate(plan) -> plan`` alters the compiled Plan, to reach runtime checks that the
        static checker would otherwise refuse first."""
        for fname, text in files.items():
            (definitions / fname).write_text(text)
        catalog = Catalog.load()
        compiled = catalog.compile(name)
        if mutate is not None:
            compiled.plan = mutate(compiled.plan)
        return runs.start(compiled, inputs or {}, catalog=catalog, **kw).to_dict()

    return run
