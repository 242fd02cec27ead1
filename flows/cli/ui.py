"""`ergon ui`: start the Streamlit dashboard (issue 6)."""

from __future__ import annotations

from flows.cli import app  # noqa: F401
