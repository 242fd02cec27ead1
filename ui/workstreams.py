"""An agent visit's workstreams on the run page: each delegated child with its state, phase and a
deadline bar, its latest progress, its result or error, what it spent, and its Prefect flow run.

The run page calls :func:`show` inside an open visit; the page re-draws every two seconds while
the run goes on, so a running child's bar moves. :func:`summaries` is the pure part (tested
without Streamlit).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import streamlit as st

from ui import format as fmt
from ui import json_view
from ui import nav

ENDED = ("completed", "failed", "timeout", "canceled")


def deadline_share(row: Any, now: datetime | None = None) -> float:
    """The share of its deadline a child used (0-1): launch to its end, or to now while it runs."""
    seconds = fmt.seconds_between(row.started_at or row.created_at, row.ended_at,
                                  now=None if row.status in ENDED else (now or datetime.now(UTC)))
    if seconds is None or not row.deadline_seconds:
        return 0.0
    return max(0.0, min(1.0, seconds / row.deadline_seconds))


def summaries(rows: list[Any], now: datetime | None = None) -> list[dict[str, Any]]:
    """What the section shows of each child, in launch order."""
    out = []
    for w in rows:
        share = deadline_share(w, now)
        phase = fmt.status(w.phase) + (f" `{w.tool}`" if w.phase == "executing_tool" and w.tool else "")
        notes = (["interactive"] if w.interactive else []) + (["relaunched after a crash"] if w.relaunch_of else []) \
            + ([f"ended: {fmt.status(w.end_reason)}"] if w.end_reason and w.end_reason not in ("completed", "error") else [])
        out.append({
            "id": w.id, "key": w.key, "name": w.name, "status": w.status, "phase": phase, "iteration": w.iteration,
            "share": share, "bar": f"{round(share * 100)}% of its {w.deadline_seconds:g} s deadline",
            "notes": notes, "progress": w.progress, "error": w.error, "summary": w.summary, "result": w.result,
            "flow_run": w.prefect_flow_run_id,
        })
    return out


def show(visit: Any) -> None:
    """The workstreams an agent visit launched (nothing for other visits, or an agent that did not delegate)."""
    if getattr(visit, "node_type", None) != "agent":
        return
    from flows.store import workstreams as workstream_store

    rows = workstream_store.for_visit(visit.id)
    if not rows:
        return
    st.caption(f"{len(rows)} workstream(s) — sub-agents this visit delegated to")
    for item in summaries(rows):
        with st.container(border=True, key=f"ws:{item['id']}"):
            st.markdown(f"**{item['name']}** `{item['key']}` · {fmt.status(item['status'])} · phase {item['phase']}"
                        f" · iteration {item['iteration']}" + "".join(f" · {n}" for n in item["notes"]))
            st.progress(item["share"], text=item["bar"])
            if item["progress"]:
                st.caption(fmt.short(item["progress"], 200))
            if item["error"]:
                (st.warning if item["status"] in ("timeout", "canceled") else st.error)(item["error"])
            llm, tools = workstream_store.calls(item["id"])
            spent = f"{len(llm)} LLM call(s) · {sum(c.tokens_in + c.tokens_out for c in llm)} tokens · " \
                    f"{fmt.cost(sum(c.cost_usd for c in llm))} · {len(tools)} tool call(s)"
            url = nav.prefect_url("flow-run", item["flow_run"]) if item["flow_run"] else None
            st.caption(spent + (f" · [Prefect flow run]({url})" if url else ""))
            if item["summary"]:
                result = st.expander("Its result", key=f"ws_result:{item['id']}")
                with result:
                    if isinstance(item["result"], (dict, list)):
                        json_view.show(item["result"], expanded=1)
                    else:
                        st.text(item["summary"])
