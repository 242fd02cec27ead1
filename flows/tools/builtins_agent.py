"""The agent's working tools: ``think``, ``plan`` / ``update_plan`` and the run's artifacts.

They work on the run named by the tool context (:func:`flows.tools.context.current`), so an
agent can only see and write its own run's artifacts. The plan is itself an artifact (key
``plan``, type ``json``): every change adds a version, so the dashboard shows how the plan
evolved, and a resumed run finds it where the crashed one left it.

Inside a workstream (a sub-agent an agent delegated to, :mod:`flows.runtime.workstreams`) the
keys it writes — its plan included — get the prefix ``workstreams/<id>/``, so that sibling
children and their parent never overwrite each other; it reads a key under its prefix first,
then the run's key as given (what the parent wrote), and lists the whole run's artifacts.
"""

from __future__ import annotations

from typing import Any, Literal

from flows.tools import tool
from flows.tools.context import current
from flows.tools.errors import ToolError

ArtifactType = Literal["markdown", "table", "json", "chart", "file"]
StepStatus = Literal["pending", "in_progress", "completed", "skipped", "failed"]

PLAN_KEY = "plan"
#: Upper bound on artifact keys (they are shown in lists and used in `artifact:<key>` sources).
MAX_KEY = 200


def _run_id(tool_name: str) -> str:
    run_id = current().run_id
    if not run_id:
        raise ToolError(tool_name, "needs a run (no run is set in the tool context)")
    return run_id


def _check_key(tool_name: str, key: str) -> str:
    key = key.strip()
    if not key or len(key) > MAX_KEY:
        raise ToolError(tool_name, f"an artifact key must have 1 to {MAX_KEY} characters")
    return current().artifact_prefix + key


def _rows(run_id: str, key: str) -> list[Any]:
    """The versions of ``key`` as the caller sees it: its own (prefixed) key first, else the run's."""
    from flows.store import artifacts as artifact_store

    prefix = current().artifact_prefix
    rows = artifact_store.artifacts_for_run(run_id, key=prefix + key) if prefix else []
    return rows or artifact_store.artifacts_for_run(run_id, key=key)


def _describe(row: Any, *, content: bool = False) -> dict[str, Any]:
    out = {"key": row.key, "version": row.version, "type": row.type, "description": row.description,
           "created_at": row.created_at.isoformat() if row.created_at else None}
    if content and isinstance(row.content, dict) and row.content.get("encoding") == "base64":
        # a PDF or DOCX (flows.tools.builtins_catalog_artifacts): its bytes are no text a model can
        # read, and would fill its context; the tools that read such files take the key
        out["content"] = {k: v for k, v in row.content.items() if k != "data"}
        out["note"] = "binary file: read it with render_docx or inspect_pdf"
    elif content:
        out["content"] = row.content
    return out


# --------------------------------------------------------------------------------------------
# Reasoning and planning


@tool(name="think")
def think(thought: str) -> dict:
    """Think step by step about the problem; nothing else happens (the thought is recorded with the call).

    Args:
        thought: your reasoning, as long as needed
    """
    return {"ok": True}


def _latest_plan(run_id: str) -> dict[str, Any] | None:
    from flows.store import artifacts as artifact_store

    rows = artifact_store.artifacts_for_run(run_id, key=current().artifact_prefix + PLAN_KEY)
    return rows[-1].content if rows else None


def _save_plan(run_id: str, plan: dict[str, Any]) -> dict[str, Any]:
    from flows.artifacts import record

    row = record(run_id, current().artifact_prefix + PLAN_KEY, "json", plan, visit_id=current().visit_id,
                 description="The agent's plan")
    return {**plan, "version": row.version}


@tool(name="plan")
def plan(steps: list[str]) -> dict:
    """Record a step-by-step plan for the task (replaces any earlier plan). Steps are numbered from 1.

    Args:
        steps: the steps, in order, one short sentence each
    """
    run_id = _run_id("plan")
    cleaned = [s.strip() for s in steps if s.strip()]
    if not cleaned:
        raise ToolError("plan", "a plan needs at least one step")
    return _save_plan(run_id, {"steps": [
        {"index": i, "title": title, "status": "pending", "note": None} for i, title in enumerate(cleaned, 1)
    ]})


@tool(name="update_plan")
def update_plan(step_index: int, status: StepStatus, note: str | None = None) -> dict:
    """Update one step of the recorded plan: its status and an optional note.

    Args:
        step_index: the step's number, as returned by `plan` (the first step is 1)
        status: pending, in_progress, completed, skipped or failed
        note: what happened, or why the status changed
    """
    run_id = _run_id("update_plan")
    current_plan = _latest_plan(run_id)
    if not current_plan or not current_plan.get("steps"):
        raise ToolError("update_plan", "there is no plan yet: call `plan` first")
    steps = [dict(s) for s in current_plan["steps"]]
    if not 1 <= step_index <= len(steps):
        raise ToolError("update_plan", f"step_index must be between 1 and {len(steps)}")
    steps[step_index - 1].update(status=status, **({"note": note} if note is not None else {}))
    return _save_plan(run_id, {"steps": steps})


# --------------------------------------------------------------------------------------------
# Artifacts


@tool(name="write_artifact")
def write_artifact(key: str, content: Any, type: ArtifactType = "markdown", description: str | None = None) -> dict:
    """Store a run artifact (markdown text, a JSON value, a table, a chart spec or a file's text).

    Writing the same key again adds a new version; the previous ones stay readable.

    Args:
        key: a short name such as `report` or `out/summary.md`
        content: the text (markdown, file) or JSON value (json, table, chart)
        type: markdown, json, table, chart or file
        description: one line saying what the artifact is
    """
    from flows.artifacts import record

    run_id = _run_id("write_artifact")
    key = _check_key("write_artifact", key)
    if type in ("markdown", "file") and not isinstance(content, str):
        raise ToolError("write_artifact", f"a {type} artifact's content must be text")
    row = record(run_id, key, type, content, visit_id=current().visit_id, description=description)
    return {"key": row.key, "version": row.version, "type": row.type}


@tool(name="read_artifact")
def read_artifact(key: str, version: int | None = None) -> dict:
    """Read a run artifact: the latest version, or the one asked for.

    Args:
        key: the artifact's key
        version: a version number (default: the latest)
    """
    from flows.store import artifacts as artifact_store

    run_id = _run_id("read_artifact")
    rows = _rows(run_id, key)
    if not rows:
        keys = sorted({r.key for r in artifact_store.artifacts_for_run(run_id, latest_only=True)})
        raise ToolError("read_artifact", f"no artifact `{key}` in this run (artifacts: {', '.join(keys) or 'none'})")
    if version is None:
        return _describe(rows[-1], content=True)
    for row in rows:
        if row.version == version:
            return _describe(row, content=True)
    raise ToolError("read_artifact", f"artifact `{key}` has versions 1 to {rows[-1].version}, not {version}")


@tool(name="list_artifacts")
def list_artifacts() -> list[dict]:
    """List the run's artifacts (latest version of each key), without their content."""
    from flows.store import artifacts as artifact_store

    run_id = _run_id("list_artifacts")
    return [_describe(row) for row in artifact_store.artifacts_for_run(run_id, latest_only=True)]
