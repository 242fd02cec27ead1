"""Versions fixtures: a definitions folder + store, a review process to publish and change, and
the `ergon` CLI called in-process (its output captured by pytest's capsys)."""

from __future__ import annotations

import pytest
from versions_samples import review


@pytest.fixture
def folder(store, definitions, monkeypatch, tokens):
    """The definitions folder with review.yaml (v0 text), the store, acting as lea (her token in ERGON_TOKEN)."""
    monkeypatch.setenv("ERGON_TOKEN", tokens["lea"])
    (definitions / "review.yaml").write_text(review())
    return definitions


@pytest.fixture
def ergon(capsys):
    """ergon("publish", "review", ...) → (exit code, stdout, stderr), in-process."""
    from flows.cli import run

    def call(*args: str) -> tuple[int, str, str]:
        capsys.readouterr()
        code = run(list(args))
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    return call
