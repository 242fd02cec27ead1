"""Ergon's definition compiler: YAML/JSON → checked IR → executable Plan.

Pure Python over plain data: this package never imports prefect, sqlmodel or litellm, so a
definition author's CI can check definitions in a fraction of a second.

Public API::

    ws = load_workspace(["definitions"])     # every definition in a folder
    report = check_workspace(ws)            # all diagnostics at once
    plan = compile_plan(ws, "contract_review")   # raises CompileError if the definition has errors
"""

from compiler.check import check_workspace
from compiler.errors import CODES, CompileError, Diagnostic, Report
from compiler.plan import Plan, build_plan, compile_plan
from compiler.render import render_dot, render_mermaid
from compiler.workspace import Workspace, load_workspace, workspace_from_texts

__all__ = [
    "CODES", "CompileError", "Diagnostic", "Report", "Workspace",
    "Plan", "build_plan", "check_workspace", "compile_plan", "load_workspace", "render_dot",
    "render_mermaid", "workspace_from_texts",
]
