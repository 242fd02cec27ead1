"""The agents' ``ask_user`` tool: ask a person and wait for the answer (a human task; the run pauses).

The tool itself only shapes the question: the asking — the task, the wait, the answer — is the
human-task body's (:func:`flows.runtime.bodies.human_task.ask_person`), which the agent body puts
in the tool context as ``ask``. Outside an agent there is no one to ask for, and the tool says so.
"""

from __future__ import annotations

from typing import Any

from flows.humans import TaskExpired
from flows.tools import tool
from flows.tools.context import current
from flows.tools.errors import ToolError


@tool(name="ask_user")
async def ask_user(question: str, fields: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Ask a person a question and wait for the answer (creates a human task; the run pauses).

    Args:
        question: What to ask, in plain language.
        fields: Extra answer fields the person fills in, each {name, type (text|string|number|boolean|select),
            required, options, label}; a free-text `answer` field is always included.
    """
    ctx = current()
    if not ctx.run_id or ctx.ask is None:
        raise ToolError("ask_user", "needs a run (an agent node): it creates a human task")
    asked = [{"name": "answer", "type": "text", "required": True, "label": question}]
    asked += [f for f in (fields or []) if isinstance(f, dict) and f.get("name") not in ("answer", None)]
    try:
        task, answer = await ctx.ask(node_id=ctx.node_id or "ask_user", title=question,
                                     description=f"Asked by the agent of node `{ctx.node_id}`.",
                                     assignee=ctx.assignee, fields=asked)
    except TaskExpired:
        return {"error": "nobody answered in time"}
    return {"answered_by": task.answered_by, **answer}
