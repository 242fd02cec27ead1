"""Helpers the compiler tests share: check in-memory documents, keep one pass's codes."""

from __future__ import annotations

import textwrap

from compiler import check_workspace, workspace_from_texts


def diagnostics(text: str, codes=None, *, file: str = "p.yaml", tools=(), others: dict[str, str] | None = None) -> list:
    """Diagnostics of ``text`` (dedented), optionally beside ``others`` files, limited to ``codes``."""
    ws = workspace_from_texts({file: textwrap.dedent(text), **(others or {})}, tools=tools)
    return [d for d in check_workspace(ws).diagnostics if (codes is None or d.code in codes) and d.file == file]


def brief(diags) -> list[tuple[str, int, int]]:
    """(code, line, column) of each diagnostic: what golden expectations compare."""
    return [(d.code, d.line, d.col) for d in diags]
