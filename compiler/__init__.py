"""Ergon's definition compiler: YAML/JSON → checked IR → executable Plan.

Pure Python over plain data: this package never imports prefect, sqlmodel or litellm, so a
definition author's CI can check definitions in a fraction of a second.

Public API::

    ws = load_workspace(["definitions"])     # every definition in a folder
    report = check_workspace(ws)            # all diagnostics at once
    plan = compile_plan(ws, "contract_review")   # raises CompileError if the definition has errors
"""

from typing import TYPE_CHECKING, Any

from compiler.check import check_workspace
from compiler.errors import CODES, CompileError, Diagnostic, Report
from compiler.workspace import Workspace, load_workspace, workspace_from_texts

if TYPE_CHECKING:
    from compiler.plan import Plan, build_plan, compile_plan
    from compiler.render import render_dot, render_mermaid

#: Imported when first asked for (PEP 562): checking needs neither the Plan's models nor the
#: renderers, and `ergon check` imports this package.
_LAZY = {"Plan": "compiler.plan", "build_plan": "compiler.plan", "compile_plan": "compiler.plan",
         "render_dot": "compiler.render", "render_mermaid": "compiler.render"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = [
    "CODES", "CompileError", "Diagnostic", "Report", "Workspace",
    "Plan", "build_plan", "check_workspace", "compile_plan", "load_workspace", "render_dot",
    "render_mermaid", "workspace_from_texts",
]
