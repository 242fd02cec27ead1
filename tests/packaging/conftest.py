"""The installed wheel, built once for the packaging tests (:mod:`installed`)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from installed import build_venv  # noqa: E402


@pytest.fixture(scope="session")
def venv(tmp_path_factory) -> Path:
    """A virtualenv outside the checkout with the wheel installed."""
    return build_venv(tmp_path_factory.mktemp("installed"))
