"""`ergon publish|versions|diff|revert`: published versions of definitions (issue 7)."""

from __future__ import annotations

from flows.cli import app  # noqa: F401
