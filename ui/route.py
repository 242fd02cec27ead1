"""The executed route of a run, for the state chart (:class:`compiler.render.RouteHighlight`).

Pure: it reads the plan and the run's visit rows (``flows.store.visits.visits_for_run(light=True)``) and
nothing else, so it is tested without Streamlit.

* **visited**: each top-level node's latest visit status (a node visited twice in a loop shows
  how its last visit went); foreach items and branch children are inside their parent node.
* **taken**: state machines record where each visit went next (``next_node``), which is exactly
  the transition taken; pipelines have no routing, so an edge counts as taken when its source
  completed and its target ran (was not skipped).
* **current**: the node a live run is at (running or waiting for a person); for an ended run,
  the node it ended on (the failed node, or the final node that is its outcome).

:func:`first_inspected` picks the node the run page's inspector opens on, and :func:`node_state`
says in words where a node stands, for the inspector's node picker and its visits.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from compiler.plan import Plan
from compiler.render import RouteHighlight


def route_highlight(plan: Plan, visits: Iterable[Mapping[str, Any]], run_status: str | None = None) -> RouteHighlight:
    top = [v for v in visits if v.get("parent_visit_id") is None and v["node_id"] in plan.nodes]
    top.sort(key=lambda v: v["sequence"])
    visited: dict[str, str] = {}
    for v in top:
        visited[v["node_id"]] = v["status"]
    edges = {(e.source, e.target) for e in plan.edges}
    taken: set[tuple[str, str]] = set()
    if plan.control == "dag":
        for source, target in edges:
            if visited.get(source) == "completed" and visited.get(target) not in (None, "skipped"):
                taken.add((source, target))
    else:
        for v in top:
            if v.get("next_node") and (v["node_id"], v["next_node"]) in edges:
                taken.add((v["node_id"], v["next_node"]))
    return RouteHighlight(visited=visited, taken=frozenset(taken), current=_current(top, run_status))


def _current(top: list[Mapping[str, Any]], run_status: str | None) -> str | None:
    if not top:
        return None
    live = [v for v in top if v["status"] in ("running", "paused")]
    if live:
        return live[-1]["node_id"]
    failed = [v for v in top if v["status"] == "failed"]
    if run_status in ("failed", "crashed") and failed:
        return failed[-1]["node_id"]
    return top[-1]["node_id"]


def first_inspected(highlight: RouteHighlight, run_status: str | None, last_changing: str | None) -> str | None:
    """The most informative node to open a run on: where a live run is, the node a failed run
    failed at, otherwise the last node that changed the context (``last_changing``; a
    completed run's final node holds nothing to read), else where the run ended."""
    if run_status == "completed" and last_changing:
        return last_changing
    return highlight.current or last_changing


#: Run statuses after which nothing of the run moves any more.
_ENDED = {"completed": "completed", "failed": "failed", "crashed": "crashed", "cancelled": "was cancelled"}


def node_state(visit_status: str, run_status: str | None, asks_person: bool) -> str:
    """Where a node's (latest) visit stands, as the run page says it: a visit's own status is
    not the whole story. A run waiting for a person inside its process (a blocking pause) keeps
    the asking visit ``running`` while the run is ``paused``; a suspended run marks it ``paused``;
    either way the node waits for a person when it has an open task (``asks_person``). A run
    that ended (it crashed, or was cancelled while waiting) leaves its open visit as it was,
    but nothing runs or waits there any more."""
    if visit_status in ("running", "paused"):
        if run_status in _ENDED:
            return f"stopped: the run {_ENDED[run_status]}"
        if run_status == "paused" or visit_status == "paused":
            return "paused (waiting for a person)" if asks_person else "paused"
        if run_status == "cancelling":
            return "running (cancel requested)"
        return "running"
    return visit_status.replace("_", " ")  # completed, failed, skipped, cancelled
