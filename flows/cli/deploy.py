"""`ergon deploy`: Prefect deployments for definitions, written to prefect.yaml (issue 7)."""

from __future__ import annotations

from flows.cli import app  # noqa: F401
