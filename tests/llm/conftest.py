"""LLM-layer fixtures: the fake OpenAI-compatible server, environments pointing at it, a run.

Backoff is real code but instant here: the gateway's own ``sleep`` and the litellm Router's
host sleep are replaced by recorders, so tests assert the backoff sequence without waiting.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from fake_openai import FakeOpenAI  # noqa: E402


@pytest.fixture(scope="session")
def _server():
    server = FakeOpenAI().start()
    yield server
    server.stop()


@pytest.fixture
def fake(_server):
    """The fake server, with empty scripts and request log."""
    _server.reset()
    yield _server
    _server.reset()


@pytest.fixture(autouse=True)
def sleeps(monkeypatch):
    """Every backoff sleep requested (gateway and Router), in seconds; none actually waits."""
    recorded: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        recorded.append(seconds)
        await asyncio.sleep(0)

    from flows.llm import gateway

    monkeypatch.setattr(gateway, "sleep", fake_sleep)
    from flows.llm._litellm import litellm

    litellm()  # import it (once per session) so that the Router's host can be patched
    from litellm.router_python_host import PythonHost

    monkeypatch.setattr(PythonHost, "sleep", lambda self, seconds: fake_sleep(seconds))
    monkeypatch.delenv("ERGON_MODEL", raising=False)
    monkeypatch.delenv("ERGON_CASSETTE_RECORD", raising=False)
    monkeypatch.delenv("ERGON_CASSETTE_REPLAY", raising=False)
    return recorded


@pytest.fixture
def make_env(fake):
    """make_env(name, [model names], **fields) → an EnvironmentDef on the fake server."""
    from compiler.ir import EnvironmentDef

    def make(name: str, models: list[str | dict], **fields) -> EnvironmentDef:
        entries = []
        for m in models:
            entry = {"model": f"openai/{m}", "name": m, "api_base": fake.url, "api_key": "env:FAKE_OPENAI_KEY"} \
                if isinstance(m, str) else {"api_base": fake.url, "api_key": "env:FAKE_OPENAI_KEY", **m}
            entries.append(entry)
        return EnvironmentDef.model_validate({"kind": "environment", "name": name, "models": entries, **fields})

    return make


@pytest.fixture(autouse=True)
def _fake_key(monkeypatch):
    monkeypatch.setenv("FAKE_OPENAI_KEY", "sk-fake-test-key")


@pytest.fixture
def direct(fake):
    """Request parameters that send a plain model string to the fake server."""
    return {"api_base": fake.url, "api_key": "sk-fake-test-key"}


@pytest.fixture
def run_id(store):
    from flows.store import runs as run_store

    return run_store.create_run("llm_test", content={"kind": "test"}).id


@pytest.fixture
def visit(run_id):
    """visit(node_id, attempt=1, status=None) → a visit id in the test run."""
    from flows.store import visits as visit_store

    def make(node_id: str = "ask", attempt: int = 1) -> str:
        return visit_store.start_visit(run_id, node_id, "interaction", attempt=attempt).id

    return make
