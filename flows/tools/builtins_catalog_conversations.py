"""The catalog's conversation tools over the store's runs and model calls.

A *conversation* is a run: ``search_conversations`` finds runs by status, creation time, who
started them (``initiator``) and their definition (``interaction``), newest first, and can write
the whole result set to a JSON artifact while returning a preview. ``analyze_conversation``
reads another run's model calls — for each agent or interaction visit (and each workstream), the
messages of its last call and the answer — as a transcript, and asks the default model
(``ERGON_MODEL``, else the offline model) to analyze it with the caller's ``analyzer_prompt``,
optionally held to a ``result_schema``. The transcript and prompt reach the model as data, never
as template text.

What an agent sees: every run of the store this deployment uses (one project), as its
dashboard does. Summaries never include a run's inputs or context; the transcript holds the
messages as recorded, in which secrets were already redacted (:mod:`flows.llm.records`).
Transcripts are capped (:data:`MAX_TRANSCRIPT`, the end kept: a running workflow's latest turns
matter most).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any, Literal

from flows.tools import tool
from flows.tools.errors import ToolError

RunStatus = Literal["pending", "running", "paused", "completed", "failed", "crashed", "cancelled", "cancelling"]
#: Runs written to an output artifact at most; and the runs a preview shows.
MAX_ARTIFACT_RUNS = 1000
PREVIEW = 5
#: Longest transcript sent for analysis, and longest single message in it (characters).
MAX_TRANSCRIPT = 60_000
MAX_MESSAGE = 4_000


def _when(tool_name: str, value: str | None, what: str) -> datetime | None:
    if value is None:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise ToolError(tool_name, f"`{what}` must be an ISO 8601 date or time, e.g. 2026-05-01T09:00:00Z") from None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def _plain(row: dict[str, Any]) -> dict[str, Any]:
    return {k: v.isoformat() if isinstance(v, datetime) else v for k, v in row.items()}


@tool(name="search_conversations")
def search_conversations(status: RunStatus | None = None, since: str | None = None, until: str | None = None,
                         initiator: str | None = None, interaction: str | None = None, limit: int = 20,
                         offset: int = 0, output_artifact: str | None = None) -> dict:
    """Search workflow runs (conversations), newest first: each run's id, definition, status, who
    started it, times, outcome or error, tokens, cost and number of model calls.

    Args:
        status: only runs in this status
        since: only runs created at or after this ISO 8601 time
        until: only runs created before this ISO 8601 time
        initiator: only runs started by this user
        interaction: only runs of this definition (process, pipeline, template, workflow or interaction name)
        limit: runs per page (1-100)
        offset: runs to skip (pagination)
        output_artifact: an artifact key: write every matching run (up to 1000) there as JSON and return a preview
    """
    from flows.store import conversations

    filters: dict[str, Any] = dict(status=status, since=_when("search_conversations", since, "since"),
                   until=_when("search_conversations", until, "until"), started_by=initiator, definition=interaction)
    if output_artifact is not None:
        from flows.tools.builtins_agent import write_artifact

        rows, total = conversations.search_runs(**filters, limit=MAX_ARTIFACT_RUNS, offset=max(0, offset))
        runs = [_plain(r) for r in rows]
        written = write_artifact(output_artifact, runs, type="json", description=f"{len(runs)} runs (search_conversations)")
        return {"total": total, "written": len(runs), "artifact": written["key"], "version": written["version"],
                "preview": runs[:PREVIEW]}
    rows, total = conversations.search_runs(**filters, limit=max(1, min(limit, 100)), offset=max(0, offset))
    return {"total": total, "offset": max(0, offset), "runs": [_plain(r) for r in rows]}


def _text(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= MAX_MESSAGE else text[:MAX_MESSAGE] + f"… [{len(text) - MAX_MESSAGE} more characters]"


def _render_message(message: dict[str, Any]) -> str:
    role = message.get("role", "?")
    parts = [f"[{role}{' ' + message['name'] if message.get('name') else ''}]"]
    if message.get("content") not in (None, ""):
        parts.append(_text(message["content"]))
    for call in message.get("tool_calls") or []:
        fn = call.get("function", call) if isinstance(call, dict) else {}
        parts.append(f"→ calls {fn.get('name', '?')}({_text(fn.get('arguments', {}))})")
    return " ".join(parts)


def transcript(calls: list[dict[str, Any]]) -> str:
    """The conversation of each visit (and workstream) of a run, from its last model call: the
    messages sent and the answer, in order of the visits' first calls."""
    groups: dict[tuple[Any, Any], list[dict[str, Any]]] = {}
    for call in calls:
        groups.setdefault((call["visit_id"], call["workstream_id"]), []).append(call)
    sections = []
    for (_, workstream), group in groups.items():
        last = group[-1]
        title = f"workstream {workstream}" if workstream else f"node {last.get('node_id') or '?'}"
        lines = [f"## {title} ({len(group)} model call{'s' if len(group) != 1 else ''}, model {last['model']})"]
        lines += [_render_message(m) for m in (last["messages"] or []) if isinstance(m, dict)]
        response = last["response"] or {}
        if last["error"]:
            lines.append(f"[error] {_text(last['error'])}")
        elif response:
            lines.append(_render_message({"role": "assistant", "content": response.get("content"),
                                          "tool_calls": [{"name": c.get("name"), "arguments": c.get("arguments")}
                                                         for c in response.get("tool_calls") or []]}))
        sections.append("\n".join(lines))
    text = "\n\n".join(sections)
    if len(text) > MAX_TRANSCRIPT:
        text = f"[… the first {len(text) - MAX_TRANSCRIPT} characters are left out]\n" + text[-MAX_TRANSCRIPT:]
    return text


@tool(name="analyze_conversation")
async def analyze_conversation(run_id: str, analyzer_prompt: str, result_schema: dict[str, Any] | None = None) -> dict:
    """Load the conversation of another workflow run (its agents' and interactions' messages) and
    analyze it as `analyzer_prompt` asks, optionally answering in the shape of `result_schema`.

    Args:
        run_id: the run to analyze (from search_conversations)
        analyzer_prompt: what to find out, e.g. `Did the agent verify the totals? List the tools it used.`
        result_schema: a JSON Schema the analysis must satisfy (default: `{analysis: string}`)
    """
    import jsonschema

    from flows.store import conversations
    from flows.tools.builtins_activities import _ask, _structured_interaction

    if not analyzer_prompt.strip():
        raise ToolError("analyze_conversation", "`analyzer_prompt` is empty")
    summary = conversations.run_summary(run_id)
    if summary is None:
        raise ToolError("analyze_conversation", f"no run `{run_id}` (search_conversations lists runs)")
    calls = conversations.model_calls(run_id)
    if result_schema is not None:
        try:
            jsonschema.validators.validator_for(result_schema).check_schema(result_schema)
        except jsonschema.SchemaError as exc:
            raise ToolError("analyze_conversation", f"`result_schema` is no valid JSON Schema: {exc.message}") from None
    wrapped = result_schema is not None and result_schema.get("type") != "object"
    schema = ({"type": "object", "properties": {"analysis": {"type": "string"}}, "required": ["analysis"]}
              if result_schema is None else
              {"type": "object", "properties": {"result": result_schema}, "required": ["result"]} if wrapped else result_schema)
    interaction = _structured_interaction("AnalyzeConversation", [
        {"role": "system", "template": "You review the recorded conversation of a workflow run and answer the "
                                       "reviewer's request about it, using only what the transcript shows."},
        {"role": "user", "template": "Run {{ run.id }} of `{{ run.definition_name }}`, status {{ run.status }}"
                                     "{% if run.outcome %}, outcome {{ run.outcome }}{% endif %}"
                                     "{% if run.error %}, error: {{ run.error }}{% endif %}.\n\n"
                                     "Transcript:\n{{ transcript }}\n\nRequest: {{ analyzer_prompt }}"},
    ], schema)
    data = {"run": _plain(summary), "transcript": transcript(calls) or "(no model calls recorded)",
            "analyzer_prompt": analyzer_prompt}
    answer = await _ask("analyze_conversation", interaction, data)
    analysis = answer.get("result") if wrapped and isinstance(answer, dict) else answer
    return {"run_id": run_id, "status": summary["status"], "model_calls": len(calls), "analysis": analysis}
