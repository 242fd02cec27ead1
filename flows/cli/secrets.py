"""`ergon secrets set|list|delete`: Ergon's encrypted secrets (issue 7)."""

from __future__ import annotations

from flows.cli import app  # noqa: F401
