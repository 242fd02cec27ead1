"""The definitions folder and compiled plans, cached across script runs.

Loading and checking the folder costs tenths of a second, and every page draw would pay it,
so the :class:`flows.catalog.Catalog` is cached under a signature of the folder (its path,
newest modification time, number of files): editing a definition is seen on the next draw.
A run's plan is compiled from the snapshot the run executed (``content_hash``), which never
changes, so it is cached under that hash.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import streamlit as st


def folder_signature() -> tuple[str, float, int]:
    from flows.settings import definitions_dir

    folder = Path(definitions_dir())
    newest, count = 0.0, 0
    if folder.is_dir():
        for path in folder.rglob("*"):
            if path.is_file() and "__pycache__" not in path.parts:
                newest, count = max(newest, path.stat().st_mtime), count + 1
    return str(folder.resolve()), newest, count


@st.cache_resource(show_spinner=False, max_entries=4)
def _catalog(signature: tuple[str, float, int]) -> Any:
    from flows.catalog import Catalog

    return Catalog.load()


def catalog() -> Any:
    return _catalog(folder_signature())


@st.cache_resource(show_spinner=False, max_entries=4)
def _report(signature: tuple[str, float, int]) -> Any:
    from compiler import check_workspace

    return check_workspace(_catalog(signature).ws)


def report() -> Any:
    """The checker's report over the whole folder (every diagnostic, warnings included)."""
    return _report(folder_signature())


@st.cache_resource(show_spinner=False, max_entries=256)
def _plan(signature: tuple[str, float, int], name: str) -> Any:
    return _catalog(signature).compile(name)


def compiled(name: str) -> Any:
    """The folder's definition ``name`` compiled (``flows.catalog.Compiled``); raises
    ``compiler.CompileError`` with its diagnostics."""
    return _plan(folder_signature(), name)


@st.cache_resource(show_spinner=False, max_entries=256)
def _run_plan(signature: tuple[str, float, int], definition: str, content_hash: str | None) -> Any:
    from types import SimpleNamespace

    from flows.runs import snapshot_compiled

    pinned = SimpleNamespace(definition_name=definition, content_hash=content_hash)  # what it reads of a run
    return snapshot_compiled(pinned, _catalog(signature)).plan


def run_plan(run: Any) -> tuple[Any, str | None]:
    """The plan a run executed, or ``(None, why not)``."""
    try:
        return _run_plan(folder_signature(), run.definition_name, run.content_hash), None
    except Exception as exc:  # a snapshot whose references no longer resolve, a vanished file…
        return None, f"{type(exc).__name__}: {exc}"
