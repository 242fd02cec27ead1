"""Snapshot files: compared as they are; written when missing or when ERGON_UPDATE_SNAPSHOTS=1."""

from __future__ import annotations

import json
import os
from pathlib import Path

SNAPSHOTS = Path(__file__).parent / "snapshots"


def check_snapshot(name: str, value) -> None:
    path = SNAPSHOTS / name
    text = value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False) + "\n"
    if os.environ.get("ERGON_UPDATE_SNAPSHOTS") == "1" or not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8"), f"{path} differs (ERGON_UPDATE_SNAPSHOTS=1 rewrites it)"
