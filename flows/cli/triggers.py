"""`ergon serve` and `ergon schedules`: triggered definitions served from one process (issue 7)."""

from __future__ import annotations

from flows.cli import app  # noqa: F401
