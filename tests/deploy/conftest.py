"""Fixtures for the deployment tests: the environment a worker and the CLI share (the session's
Prefect server, this test's SQLite store and definitions folder), and a work pool per test."""

from __future__ import annotations

import os
import uuid

import pytest


@pytest.fixture
def deploy_env(prefect_api, store, definitions) -> dict[str, str]:
    return {**os.environ, "ERGON_DATABASE_URL": store, "ERGON_DEFINITIONS": str(definitions), "COLUMNS": "200"}


@pytest.fixture
def pool() -> str:
    """A work pool of this test's own, so that no other test's worker takes its runs."""
    return f"ergon-test-{uuid.uuid4().hex[:8]}"
