"""How node visits are tagged in Prefect: the node's type and ``lane:<lane>``, without paying for
a concurrency lease that nothing enforces.

Prefect 3 treats every task-run tag as a possible concurrency limit: before a tagged task run
starts, the client asks the server for a lease on ``tag:<tag>`` — even when no such limit exists —
and serialises those requests per tag set in each process (Prefect issues #19367 and #18615). On
the embedded SQLite server that is a write transaction per visit; it made a foreach of 1,000 tiny
items 6× slower and added ~2 s to the first visit after a human task (docs/benchmarks.md).

So Ergon reads, once per run, which tags have an active concurrency limit in Prefect
(``tag:NAME`` limits, which is also what ``prefect concurrency-limit create NAME N`` makes):

* a node with such a tag runs as a **tagged** Prefect task: Prefect acquires and holds its slot,
  exactly as for any Prefect task;
* every other node runs as an untagged task and **writes its tags onto its own task-run record**
  once it has started, so Prefect's database and UI show the same tags (from the Running→Completed
  state events onward) — but no lease is requested.

A limit created while a run is in progress applies from that run's next start. ``ERGON_TASK_TAGS``
chooses: ``auto`` (the default, as above), ``always`` (every visit a tagged Prefect task: Prefect's
own behaviour, lease included), ``0`` (no tags at all).
"""

from __future__ import annotations

import os
from typing import Any, Literal

from compiler.plan import PlanNode

TagMode = Literal["auto", "always", "off"]

#: How many limits one page of Prefect's filter endpoint returns.
_PAGE = 200


def tag_mode() -> TagMode:
    value = os.environ.get("ERGON_TASK_TAGS", "auto").strip().lower()
    if value in ("0", "false", "no", "off", "none"):
        return "off"
    if value in ("always", "prefect", "lease"):
        return "always"
    return "auto"


def node_tags(node: PlanNode) -> list[str]:
    """The tags a visit of ``node`` carries in Prefect (none when tagging is off)."""
    if tag_mode() == "off":
        return []
    return [node.type] + ([f"lane:{node.lane}"] if node.lane else [])


async def limited_tags() -> frozenset[str] | None:
    """Tags with an active ``tag:`` concurrency limit in Prefect; ``None`` means "treat every tag
    as limited" (mode ``always``, or the limits could not be read — then Prefect decides, as it
    would without Ergon)."""
    if tag_mode() != "auto":
        return None
    from prefect.client.orchestration import get_client

    names: set[str] = set()
    try:
        async with get_client() as client:
            offset = 0
            while True:
                page = await client.read_global_concurrency_limits(limit=_PAGE, offset=offset)
                names.update(limit.name.removeprefix("tag:") for limit in page
                             if limit.active and limit.name.startswith("tag:"))
                if len(page) < _PAGE:
                    return frozenset(names)
                offset += _PAGE
    except Exception:  # noqa: BLE001 - a server without the endpoint, a transient error: be safe
        return None


def split_tags(tags: list[str], limited: frozenset[str] | None) -> tuple[list[str], list[str]]:
    """(tags Prefect must see before the task starts, tags only written onto the record)."""
    if not tags:
        return [], []
    if limited is None or limited.intersection(tags):
        return tags, []
    return [], tags


def record_tags(task_run: Any, tags: list[str]) -> None:
    """Put ``tags`` on the running task run: the state events Prefect sends from now on carry
    them, and its server stores a task run's fields from the latest event."""
    if tags and task_run is not None:
        task_run.tags = sorted(set(task_run.tags or ()) | set(tags))
