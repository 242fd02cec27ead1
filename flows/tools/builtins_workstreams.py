"""The workstream tools: an agent delegating parts of its task to sub-agents that run beside it.

They act on the calling agent visit's workstreams (:class:`flows.runtime.workstreams.Workstreams`,
set in the tool context by the agent body), so they work only inside an agent's tool loop — the
checker refuses them for tool nodes and workflow activities (``agent-only-tool``). What a child
is, how it runs and what happens on a crash: :mod:`flows.runtime.workstreams`.
"""

from __future__ import annotations

from typing import Any, Literal

from flows.tools import tool
from flows.tools.context import current
from flows.tools.errors import ToolError

StatusFilter = Literal["all", "running", "canceling", "completed", "failed", "timeout", "canceled"]
SteerCommand = Literal["add_instruction", "set_priority", "add_constraint", "pause_requested", "resume_requested"]


def _hub(tool_name: str) -> Any:
    hub = current().workstreams
    if hub is None:
        raise ToolError(tool_name, "works only inside an agent node's tool loop (with the workstream tools in its `tools:`)")
    return hub


@tool(name="launch_workstream")
async def launch_workstream(id: str, name: str, instruction: str, allowed_tools: list[str], context: Any = None,
                            model: str | None = None, deadline_seconds: float = 300, interactive: bool = False) -> dict:
    """Launch a workstream: a sub-agent that does one part of the task in the background while you go on.

    Returns at once with its `launch_id`. The sub-agent does not see this conversation: put everything
    it needs in `instruction` and `context`. Its result comes to you as a message on your next turn
    (do not poll; end your turn to wait). Your final answer is taken only once it has ended.

    Args:
        id: a short identifier, ASCII letters, digits and underscores (for example `research_market`)
        name: a human-readable name for tracking
        instruction: clear, complete instructions for what the sub-agent is to do
        allowed_tools: the tools it may use, among your own (not the workstream tools); [] for none
        context: data it needs (any JSON value)
        model: an environment of the run to use instead of yours (default: your model)
        deadline_seconds: its deadline (30 to 1800, default 300): you are warned at 75% and 90%, it is told to wrap up at 80% and stopped at 100%
        interactive: if true, it answers its instruction and then waits for your follow-up messages (`message_workstream`) until you terminate it
    """
    return await _hub("launch_workstream").launch(
        id=id, name=name, instruction=instruction, allowed_tools=allowed_tools, context=context, model=model,
        deadline_seconds=deadline_seconds, interactive=interactive)


@tool(name="check_workstream")
async def check_workstream(launch_id: str) -> dict:
    """The state of a workstream: status, phase, iteration, elapsed and remaining time, share of its deadline used, latest progress.

    Args:
        launch_id: the `launch_id` that `launch_workstream` returned (its `id` works too)
    """
    return _hub("check_workstream").check(launch_id)


@tool(name="list_workstreams")
async def list_workstreams(status_filter: StatusFilter = "all") -> list[dict]:
    """Your workstreams (running and ended) with their status, phase, time used and latest progress.

    Args:
        status_filter: all (default), running, canceling, completed, failed, timeout or canceled
    """
    return _hub("list_workstreams").listing(status_filter)


@tool(name="get_workstream_result")
async def get_workstream_result(launch_id: str) -> dict:
    """The full result of a workstream that ended: status, summary (its answer), result (the answer as JSON, when it is), duration, error, last progress.

    Args:
        launch_id: the workstream's `launch_id`
    """
    return _hub("get_workstream_result").result(launch_id)


@tool(name="message_workstream")
async def message_workstream(launch_id: str, message: str) -> dict:
    """Send a follow-up message to an interactive workstream; its reply comes to you as a message on your next turn.

    Args:
        launch_id: the `launch_id` of an interactive workstream
        message: what to tell or ask it (it reads it as its next input)
    """
    return _hub("message_workstream").message(launch_id, message)


@tool(name="steer_workstream")
async def steer_workstream(launch_id: str, command: SteerCommand, message: str) -> dict:
    """Give a running workstream a directive without stopping it; it takes it before its next step.

    Args:
        launch_id: the workstream's `launch_id`
        command: add_instruction, set_priority, add_constraint, pause_requested or resume_requested
        message: the directive
    """
    return _hub("steer_workstream").steer(launch_id, command, message)


@tool(name="terminate_workstream")
async def terminate_workstream(launch_id: str) -> dict:
    """Stop a workstream (interactive workstreams end only this way); returns how it ended and its last progress.

    Args:
        launch_id: the workstream's `launch_id`
    """
    return await _hub("terminate_workstream").terminate(launch_id)
