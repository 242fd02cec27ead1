"""Ergon's artifacts in Prefect's UI: each one recorded while a run executes is published on
its Prefect flow run (and the task run of the visit that wrote it) as a Prefect artifact.

Registered as an :data:`flows.artifacts.on_recorded` callback while a run executes on Prefect
(:class:`flows.prefect.build.PrefectBackend`). The artifact is written from inside the visit's
Prefect task run, so Prefect's run context names the flow run and task run it belongs to;
outside a run nothing is published. By type:

* ``markdown`` → a markdown artifact; ``table`` (rows of objects, rows of lists, or columns) →
  a table artifact; ``json`` and ``file`` → a markdown artifact showing the value in a code
  block; ``chart`` → a link artifact to the run in Ergon's dashboard (Prefect cannot draw it).
* The key is ``<definition>-<key>``, slugged to what Prefect accepts (lowercase letters, digits,
  dashes): Prefect keeps each key's versions across flow runs, as Ergon does within a run.
* The description says which Ergon artifact and version it is and links back to the run's page
  in Ergon's dashboard (:func:`flows.settings.dashboard_url`).
"""

from __future__ import annotations

import json
import re
from typing import Any

from prefect.artifacts import create_link_artifact, create_markdown_artifact, create_table_artifact
from prefect.context import get_run_context
from prefect.exceptions import MissingContextError

from flows.settings import dashboard_url
from flows.store import runs as run_store
from flows.store.models import Artifact


def prefect_key(definition: str, key: str) -> str:
    """The Prefect artifact key of Ergon artifact ``key`` of a run of ``definition``."""
    return re.sub(r"[^a-z0-9]+", "-", f"{definition}-{key}".lower()).strip("-") or "ergon-artifact"


def run_page(run_id: str) -> str:
    """The address of a run's page in Ergon's dashboard."""
    return f"{dashboard_url()}/run?run={run_id}"


def _is_table(content: Any) -> bool:
    if isinstance(content, dict):
        return bool(content) and all(isinstance(k, str) and isinstance(v, list) for k, v in content.items())
    if isinstance(content, list) and content:
        return all(isinstance(r, dict) for r in content) or all(isinstance(r, list) for r in content)
    return False


def _fenced(text: str, language: str) -> str:
    fence = "````" if "```" in text else "```"
    return f"{fence}{language}\n{text}\n{fence}"


def publish(row: Artifact) -> None:
    """Publish ``row`` on the current Prefect flow run (nothing outside a run)."""
    try:
        get_run_context()
    except MissingContextError:
        return
    run = run_store.get_run(row.run_id)
    key = prefect_key(run.definition_name if run else "ergon", row.key)
    link = run_page(row.run_id)
    about = f"Ergon artifact `{row.key}` v{row.version} ({row.type})"
    description = (f"{row.description} · " if row.description else "") + f"{about} · [open the run in Ergon]({link})"
    # `_sync=True`: the tool may record from the event loop's thread, where Prefect would return a coroutine
    make: Any
    if row.type == "markdown" and isinstance(row.content, str):
        make, args = create_markdown_artifact, {"markdown": row.content}
    elif row.type == "table" and _is_table(row.content):
        make, args = create_table_artifact, {"table": row.content}
    elif row.type in ("json", "table", "file"):
        text = row.content if isinstance(row.content, str) else json.dumps(row.content, indent=2, default=str)
        make, args = create_markdown_artifact, {"markdown": _fenced(text, "text" if row.type == "file" else "json")}
    else:
        make, args = create_link_artifact, {"link": link, "link_text": f"{row.key} v{row.version} in Ergon's dashboard"}
    make(**args, key=key, description=description, _sync=True)


def register() -> None:
    """Publish every artifact recorded in this process while a run executes (idempotent)."""
    from flows import artifacts

    if publish not in artifacts.on_recorded:
        artifacts.on_recorded.append(publish)
